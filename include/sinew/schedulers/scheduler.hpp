#pragma once
/// \file scheduler.hpp
/// The interface every scheduling policy implements (`tbb`, `steal`, `deal`;
/// docs/schedulers.md). Graphs use it to activate stages and to run the
/// chunks of a map; programs can also use it directly.
///
/// \code
/// auto& s = sinew::default_scheduler();
/// sinew::task_group g(s);
/// for (int i = 0; i < 100; ++i) g.run([i] { work(i); });
/// g.wait();                                   // rethrows the first exception
/// s.parallel_for(1'000'000, 1024, [&](size_t b, size_t e) { for (auto i = b; i < e; ++i) x[i] *= 2; });
/// \endcode
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <sinew/engine/buffer.hpp>
#include <sinew/detail/function_ref.hpp>
#include <sinew/schedulers/loop_affinity.hpp>
#include <sinew/schedulers/task_function.hpp>

namespace sinew {

class topology;

/// Where a task would best run: a NUMA node, or the buffers it reads (a
/// NUMA-aware scheduler computes the node from where their pages are).
struct locality_hint {
  int numa_node = -1;
  std::span<const buffer_ref> reads{};
  /// D of Algorithm 1 given directly: bytes of the task's inputs on each NUMA
  /// node (one entry per node; takes precedence over `reads` and
  /// `numa_node`). Only read during `submit` (the `deal` policy copies it).
  std::span<const std::uint64_t> bytes_on_node{};
  /// For `parallel_for_at`: where the blocks of this loop ran last time
  /// (loop_affinity.hpp); a policy that can gives them the same workers again.
  loop_affinity* affinity = nullptr;
};

/// Counters of one scheduler since it was created (or since `reset_stats`).
struct scheduler_stats {
  struct worker {
    std::uint64_t tasks = 0;    ///< tasks (and map chunks) run by this worker
    std::uint64_t busy_ns = 0;  ///< time spent running them
    std::uint64_t steals = 0;          ///< tasks taken from another worker (work-stealing policies)
    std::uint64_t steal_attempts = 0;  ///< steals tried on victims that looked non-empty
    /// NUMA node of the worker in the scheduler's topology (-1: the slot of
    /// threads that are not workers, e.g. `tbb`'s callers of parallel_for).
    int node = -1;
    /// `steals` split by where the stolen task was queued: by a worker (or in
    /// a queue) of the same node, or of another node.
    std::uint64_t steals_same_node = 0;
    std::uint64_t steals_remote = 0;
    /// Sum of D (bytes of the task's inputs per node, from its
    /// `locality_hint`) over the submitted tasks this worker ran that had one.
    std::uint64_t hinted_bytes = 0;
    /// The part of `hinted_bytes` on other nodes than `node`: bytes read
    /// from remote memory (what dealing minimises, [Muddukrishna15, §4.1]).
    std::uint64_t remote_bytes = 0;
  };
  std::uint64_t tasks_submitted = 0;
  std::uint64_t tasks_run = 0;
  std::uint64_t parallel_fors = 0;
  /// parallel_for calls run entirely by the caller (one chunk, or all the
  /// chunks together cheaper than waking a worker; `steal` and `deal`).
  std::uint64_t parallel_fors_inline = 0;
  /// Sleeping workers woken up (by submits and parallel_for dispatches;
  /// `steal` and `deal`: what the futex reported woken).
  std::uint64_t wakeups = 0;
  std::vector<worker> workers;
  /// Fastest worker's busy time / slowest's, over workers that ran anything
  /// (1 = perfectly balanced; the load-balance ratio of [Zhang18]).
  double load_balance() const;
  /// Sums over the workers.
  std::uint64_t steals_same_node() const;
  std::uint64_t steals_remote() const;
  std::uint64_t hinted_bytes() const;
  std::uint64_t remote_bytes() const;
  /// remote_bytes() / hinted_bytes() (0 when no task had a hint).
  double remote_fraction() const;
};

namespace detail {

/// The completion count of a `task_group`: tasks submitted and not yet
/// finished, and the first exception one of them threw. A scheduler that
/// overrides `scheduler::submit_counted` calls `run(fn)` in place of `fn()`.
/// The waiter may destroy the counter as soon as it reads `pending == 0`, so
/// after its decrement a finishing task touches nothing of it but the futex
/// wake-up on its address (a private futex wake does not read the memory).
struct task_counter {
  std::atomic<std::uint32_t> pending{0};
  std::mutex m;
  std::exception_ptr error;

  /// Runs `fn`, keeps its exception, releases its captures, then counts the
  /// task finished (waking the waiter when it was the last). Returns true
  /// for the last, so that a scheduler can wake workers helping in `wait`;
  /// the counter may be gone by then.
  bool run(task_function& fn) noexcept {
    invoke(fn);
    return finish();
  }
  /// The halves of `run`, for a scheduler that counts its own statistics in
  /// between: `invoke` runs `fn`, keeps its exception and releases its
  /// captures; `finish` counts the task done (the counter may be gone after).
  void invoke(task_function& fn) noexcept;
  bool finish() noexcept;
  /// Sleeps until `pending` is 0.
  void wait() noexcept;

  /// A scheduler's own state for this group, made by its first
  /// `submit_counted` and freed with the counter (`tbb`: the oneTBB
  /// task_group its tasks belong to, so that the waiter can run them).
  struct extension {
    virtual ~extension() = default;
  };
  std::atomic<extension*> ext{nullptr};

  task_counter() = default;
  task_counter(const task_counter&) = delete;
  task_counter& operator=(const task_counter&) = delete;
  ~task_counter() { delete ext.load(std::memory_order_acquire); }
};

/// A one-shot event that a thread can wait for while its scheduler puts it
/// to work (`scheduler::help_until`): a run's end, for `run_future::wait`.
///
/// \code
/// sinew::detail::help_latch done;
/// sched.submit([&] { work(); done.open(); });
/// sched.help_until(done);   // on a worker: runs queued tasks meanwhile
/// \endcode
class help_latch {
 public:
  /// Opens the latch (idempotent): wakes `wait()` and runs the hooks `arm`
  /// installed, each once, after the latch's lock is released.
  void open();
  bool is_open() const;
  /// Sleeps until open.
  void wait() const;
  /// Adds `hook` (one per waiting thread), run by `open()`; returns false
  /// (and drops `hook`) when the latch is already open.
  bool arm(std::function<void()> hook);
  /// Closed again, for its next use: nobody may wait on it, arm or open it
  /// meanwhile.
  void reset();

 private:
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  bool open_ = false;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace detail

class scheduler {
 public:
  virtual ~scheduler() = default;
  /// Policy name: "tbb", "steal", "deal".
  virtual const char* name() const noexcept = 0;
  /// Number of workers.
  virtual unsigned concurrency() const noexcept = 0;
  /// Runs `fn` asynchronously. `fn` must not throw (wrap it, or use task_group).
  virtual void submit(task_function fn, const locality_hint& hint = {}) = 0;
  /// `submit` for a task of a `task_group` whose counter `c` the caller has
  /// already incremented: runs `c.run(fn)`. The default wraps `fn` in a
  /// closure; `steal` and `deal` keep `&c` in the task itself (no second
  /// allocation, no shared state copied per task).
  virtual void submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint = {}) {
    submit([&c, f = std::move(fn)]() mutable { c.run(f); }, hint);
  }
  /// Runs `fn` asynchronously, as `submit`, when the submitting thread will
  /// most likely do the work itself and `fn` only checks that it was done
  /// (a graph run's start, which `run_future::get()` runs on the caller).
  /// `fn` must be short and must not throw. `tbb`, `steal` and `deal` run a
  /// check submitted from outside their workers on a timer thread after a
  /// grace period of about 100 us (1 ms at most), so that no worker wakes
  /// for a check that finds its work done (an idle `tbb` worker spins for a
  /// millisecond once woken, on the cores a CPU OpenCL device's threads
  /// need); from one of their workers, as `submit`. The destructor runs the
  /// checks still waiting. The default: `submit`.
  ///
  /// \code
  /// std::atomic<bool> pending{true};
  /// s.submit_backup([&] { if (pending.load()) s.submit([&] { if (pending.exchange(false)) work(); }); });
  /// if (pending.exchange(false)) work();     // most likely here
  /// \endcode
  virtual void submit_backup(task_function fn) { submit(std::move(fn)); }
  /// Runs `body(b, e)` over disjoint blocks covering [0, n) in parallel and
  /// returns when all are done. `grain` is the smallest block worth a task:
  /// blocks are split while longer than `grain`, so none is shorter than
  /// grain/2 unless n is. Exceptions from `body` propagate (the first wins).
  virtual void parallel_for(std::size_t n, std::size_t grain,
                            detail::function_ref<void(std::size_t, std::size_t)> body) = 0;
  /// `parallel_for` over data whose placement `hint` describes (a graph's
  /// map passes the buffers of the unit it splits). `deal` sends the blocks
  /// to the node Algorithm 1 chooses for the whole loop's D; `steal` runs
  /// them as `parallel_for` does and counts each block's share of D in
  /// `hinted_bytes` / `remote_bytes`; `tbb` ignores the data and uses
  /// `hint.affinity`; the default ignores the hint.
  ///
  /// \code
  /// sinew::buffer_ref in[] = {x};                       // x placed by a placer
  /// s.parallel_for_at({.reads = in}, n, 4096, [&](std::size_t b, std::size_t e) { f(b, e); });
  /// \endcode
  virtual void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                               detail::function_ref<void(std::size_t, std::size_t)> body) {
    (void)hint;
    parallel_for(n, grain, body);
  }
  /// Waits until a `task_group`'s tasks are done (`task_group::wait`). The
  /// default sleeps; the policies run tasks on a waiting worker of theirs
  /// meanwhile (a thread from outside sleeps).
  virtual void wait_counted(detail::task_counter& c) noexcept { c.wait(); }
  /// Returns once `l` is open. The default sleeps; the policies let a
  /// worker of theirs run queued tasks until then (waits nested in every
  /// worker cannot hang), while a thread from outside sleeps, so that n
  /// workers run a graph on n threads.
  virtual void help_until(detail::help_latch& l) { l.wait(); }
  virtual scheduler_stats stats() const = 0;
  virtual void reset_stats() = 0;
  /// NUMA node of the calling thread if it is one of this scheduler's
  /// workers, else -1 (the `standard` placement's first-touch node).
  virtual int current_node() const noexcept { return -1; }
  /// The topology the workers are placed on (null: the policy knows no
  /// nodes); a graph's placements use it, else `topology::current()`.
  virtual const topology* numa_topology() const noexcept { return nullptr; }
};

/// The process-wide default scheduler: `make_scheduler` of the policy named
/// by the environment variable `SINEW_SCHEDULER` (`tbb`, the default,
/// `steal` or `deal`) over `topology::current()`, or `SINEW_THREADS` workers
/// on one node when that is set.
scheduler& default_scheduler();

/// A set of tasks one can wait for.
class task_group {
 public:
  explicit task_group(scheduler& s) : s_(s) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group() { wait_no_throw(); }

  /// Submits `fn`; an exception it throws is kept and rethrown by `wait()`.
  void run(task_function fn, const locality_hint& hint = {});
  /// Sleeps until every task run so far has finished; rethrows the first
  /// exception one of them threw.
  void wait();

 private:
  void wait_no_throw() noexcept { s_.wait_counted(c_); }
  scheduler& s_;
  detail::task_counter c_;
};

}  // namespace sinew
