#pragma once
/// \file steal_scheduler.hpp
/// The `steal` policy: the baseline work-stealing scheduler of
/// [Muddukrishna15, §5]: one worker thread bound to each core, one task
/// queue per worker, "each thread adds newly created tasks to its own task
/// queue; threads look for work in their own task queue first; threads with
/// empty task queues select victims for stealing in a round-robin fashion".
/// The queue is the lock-free deque of [ChaseLev05] with the C11 memory
/// orders of [Le13] -- see sinew/detail/chase_lev_deque.hpp.
///
/// Policy in detail:
///  * a task submitted by one of this scheduler's workers goes to the bottom
///    of that worker's deque (LIFO for the owner); a task submitted by any
///    other thread goes to a shared FIFO injection queue (one locked shard
///    per worker, filled round-robin by each outside thread);
///  * a worker looking for work pops its own deque, then the injection queue,
///    then steals from the top of the other workers' deques, starting with
///    the one after itself and going round; every 61st look checks the
///    injection queue first, so tasks from outside cannot starve behind a
///    worker that keeps feeding itself;
///  * a worker that finds nothing spins and yields briefly, then sleeps on a
///    futex until work is submitted (no CPU is used while idle);
///  * `parallel_for` splits [0, n) in halves while a block is longer than
///    `grain` (like TBB's simple_partitioner), pushing the right halves on the
///    calling worker's deque and running the leftmost block itself; the caller
///    then helps (runs and steals tasks) until its loop is done, so a
///    parallel_for nested inside a task cannot deadlock. Called from a thread
///    that is not one of the workers, the loop is injected and the caller
///    sleeps until it is done. Every block runs even after one throws; the
///    first exception is rethrown in the caller;
///  * `task_group::wait` on a worker helps the same way (runs any task it
///    finds until the group's tasks are done), so recursive task groups
///    (divide and conquer) cannot deadlock with every worker waiting; a
///    worker already `workers::max_help_depth` (64) tasks deep sleeps
///    instead, bounding its stack. An outside thread sleeps;
///  * a task given to `submit` must not throw (std::terminate is called);
///    use `task_group`, which catches and forwards exceptions;
///  * the destructor runs every task already submitted, then joins the
///    workers. Submitting from outside while it runs is undefined.
///
/// Statistics: per worker, tasks (submitted tasks and parallel_for blocks)
/// and the time spent in them (a task run while helping inside another
/// task's parallel_for is counted in the outer task's time, not twice),
/// steals and steal attempts (steal operations on deques that looked
/// non-empty; the difference is lost races), steals split into same-node
/// and remote (victim on another NUMA node of the topology; tasks taken from
/// the injection queue are not steals), and the bytes of submitted tasks'
/// `locality_hint`s read on other nodes than the worker's (`remote_bytes`;
/// the hint never changes where a task runs under this policy).
///
/// NUMA: built over a `topology`, the scheduler has one worker per core of
/// it, worker `w` on the node of its core (synthetic `N x C`: node `w / C`),
/// pinned only on a real topology. Built with a thread count, worker `i` is
/// on the node of the i-th usable CPU when the process topology
/// (`topology::current()`) is real and the workers are pinned, else on node 0.
///
/// Select it for the default scheduler with `SINEW_SCHEDULER=steal`.
///
/// \code
/// sinew::steal_scheduler s(4);                // 4 workers, pinned to cores
/// sinew::task_group g(s);
/// for (int i = 0; i < 100; ++i) g.run([i] { work(i); });
/// g.wait();
/// s.parallel_for(n, 1024, [&](std::size_t b, std::size_t e) { for (auto i = b; i < e; ++i) x[i] *= 2; });
/// sinew::graph gr(tree, {.scheduler = &s});
/// auto st = s.stats();                        // st.workers[i].steals, ...
///
/// sinew::steal_scheduler n(sinew::topology::parse("4x4"));  // 16 workers, 4 nodes
/// std::vector<std::uint64_t> D = {0, 1 << 20, 0, 0};       // 1 MiB on node 1
/// n.submit([] { work(); }, {.bytes_on_node = D});          // runs anywhere
/// n.stats().remote_bytes();                    // 1 MiB unless a node-1 worker ran it
/// \endcode
#include <memory>

#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

class steal_scheduler final : public scheduler {
 public:
  /// `threads` = 0: one worker per hardware thread. `pin`: bind worker i to
  /// the i-th CPU this process may run on (modulo their number); failures
  /// (e.g. no permission, restricted cpuset) are ignored.
  explicit steal_scheduler(unsigned threads = 0, bool pin = true);
  /// One worker per core of `t` (see "NUMA" above). Locality hints with
  /// `bytes_on_node` must have `t.nodes()` entries (else `sinew::error`).
  explicit steal_scheduler(const topology& t, bool pin = true);
  ~steal_scheduler() override;
  steal_scheduler(const steal_scheduler&) = delete;
  steal_scheduler& operator=(const steal_scheduler&) = delete;

  const char* name() const noexcept override { return "steal"; }
  unsigned concurrency() const noexcept override;
  void submit(task_function fn, const locality_hint& hint = {}) override;
  /// From a worker, `submit`; from another thread, after a grace period on
  /// a timer thread, so that no worker wakes for a check its submitter
  /// most likely made needless (scheduler::submit_backup).
  void submit_backup(task_function fn) override;
  /// A task_group's task: the counter travels in the task (no wrapper).
  void submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint = {}) override;
  /// On a worker: runs other tasks until the group's are done (see the
  /// policy above); on any other thread: sleeps.
  void wait_counted(detail::task_counter& c) noexcept override;
  /// The same for a graph run awaited on a worker (`run_future::wait`).
  void help_until(detail::help_latch& l) override;
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override;
  void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                       detail::function_ref<void(std::size_t, std::size_t)> body) override;
  scheduler_stats stats() const override;
  void reset_stats() override;

  /// The topology the workers were placed on.
  const topology& topo() const noexcept;
  /// Node of worker `w` (w < concurrency()).
  int worker_node(unsigned w) const;
  /// Node of the calling thread if it is one of this scheduler's workers, else -1.
  int current_node() const noexcept override;
  const topology* numa_topology() const noexcept override { return &topo(); }

  struct impl;  // public name so the implementation's helpers can use it

 private:
  void submit_counted_impl(task_function&& fn, detail::task_counter* c, const locality_hint& hint);
  void start();  // launches the workers
  std::unique_ptr<impl> p_;
};

}  // namespace sinew
