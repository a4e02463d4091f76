#pragma once
/// \file tbb_scheduler.hpp
/// The default policy: oneTBB's work-stealing scheduler, one `task_arena`
/// per NUMA node. A task submitted by a task of the same arena is spawned
/// onto that worker's deque (as `tbb::task_group::run`); one submitted from
/// any other thread is enqueued into the arena (FIFO); a `parallel_for`
/// cuts its chunks into one range per worker slot, which that slot's worker
/// runs first, so that successive loops of one shape give each worker the
/// same slice (as OpenMP's static schedule), and idle workers take the rest.
///
/// NUMA: built over a `topology`, the scheduler has one
/// arena per node with as many slots as the node has cores; on a real
/// machine with several nodes each arena is constrained to its node
/// (`task_arena::constraints::numa_id`, when oneTBB reports the same number
/// of NUMA nodes; it needs oneTBB's tbbbind, otherwise arenas are
/// unconstrained). A task goes to the arena of its `locality_hint`: the node
/// where its bytes are cheapest to read (least `sum_j D[j] * distance(i, j)`,
/// as `deal` computes D), else `hint.numa_node`, else the arena of the task
/// that submits it, else round-robin over the arenas. `parallel_for` runs in
/// the caller's arena (a thread outside the scheduler: round-robin), so one
/// loop uses one node's workers.
///
/// Each arena has one more slot, reserved for a thread outside the
/// scheduler: a caller of `parallel_for` (e.g. a `run_future::get()` that
/// runs a graph's stages itself) joins its loop at once instead of handing
/// it to a worker and sleeping; the workers keep their n slots. A thread
/// outside the scheduler waiting for a run, a task graph or a group
/// sleeps, so that n workers run it on n threads (`help_until`).
/// `submit_backup` from such a thread waits a grace period on a timer
/// thread: a graph run's start, which the caller of `get()` usually runs
/// itself, wakes no worker, whose idle spinning would take the cores the
/// caller's work needs.
///
/// Statistics: per worker slot of each arena (`workers[i].node` is the
/// arena's node) tasks, busy time and hinted / remote bytes; one last slot
/// (node -1) for threads outside the arenas (callers of parallel_for that
/// run chunks). oneTBB does not report steals.
///
/// \code
/// sinew::tbb_scheduler s(4);                 // 4 workers, one arena
/// sinew::graph g(tree, {.scheduler = &s});
///
/// sinew::tbb_scheduler n(sinew::topology::parse("4x4"));   // 4 arenas of 4
/// std::vector<std::uint64_t> D = {0, 0, 1 << 20, 0};
/// sinew::task_group tg(n);
/// tg.run([] { work(); }, {.bytes_on_node = D});  // runs in node 2's arena
/// tg.wait();
/// \endcode
#include <memory>

#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

class tbb_scheduler final : public scheduler {
 public:
  /// One arena of `threads` workers (0: all hardware threads), node 0.
  explicit tbb_scheduler(unsigned threads = 0);
  /// One arena per node of `t`, each with the node's number of cores.
  /// Throws `sinew::error` if `t` has no cores.
  explicit tbb_scheduler(const topology& t);
  /// Waits for every submitted task to finish.
  ~tbb_scheduler() override;
  tbb_scheduler(const tbb_scheduler&) = delete;
  tbb_scheduler& operator=(const tbb_scheduler&) = delete;

  const char* name() const noexcept override { return "tbb"; }
  unsigned concurrency() const noexcept override;
  /// Throws `sinew::error` if `hint.bytes_on_node` is given with a size
  /// other than the number of nodes.
  void submit(task_function fn, const locality_hint& hint = {}) override;
  /// From a task of ours, `submit`; from another thread, after a grace
  /// period on a timer thread (scheduler::submit_backup).
  void submit_backup(task_function fn) override;
  /// Tasks of a task_group are oneTBB tasks of a oneTBB task_group, so that
  /// `wait_counted` can run them on the waiting thread.
  void submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint = {}) override;
  void wait_counted(detail::task_counter& c) noexcept override;
  void help_until(detail::help_latch& l) override;
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override;
  /// `parallel_for`: every loop already gives each worker slot the same
  /// range of chunks, so `hint.affinity` needs no record here; the hint's
  /// data does not move the loop.
  void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                       detail::function_ref<void(std::size_t, std::size_t)> body) override;
  scheduler_stats stats() const override;
  void reset_stats() override;

  /// The topology the arenas were made for (one node for the thread-count constructor).
  const topology& topo() const noexcept;
  /// Number of arenas (= nodes).
  std::size_t arenas() const noexcept;
  /// Node of the arena the calling thread is running a task of, else -1.
  int current_node() const noexcept override;
  const topology* numa_topology() const noexcept override { return &topo(); }

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace sinew
