#pragma once
/// \file deal_scheduler.hpp
/// The `deal` policy: NUMA work-dealing with distance-thresholded stealing,
/// Algorithms 1 ("deal-work") and 2 ("find-work") of [Muddukrishna15, §4.1],
/// with the vicinity-restricted stealing of [Muddukrishna15, §4.2].
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

/// Tuning of `deal_scheduler`. The defaults are the paper's.
struct deal_options {
  /// Algorithm 1, first threshold: a task is dealt only when
  /// `sum(D) > size_threshold` ("Sum(D) > sizeof(LLC)/C"). Unset: the
  /// topology's `llc_bytes() / cores_per_node()`.
  std::optional<std::uint64_t> size_threshold{};
  /// Algorithm 1, second threshold ("Standard_Deviation(D) > 0"): the data
  /// counts as *evenly spread*, and the task is not dealt, when
  /// `max_j D[j] - min_j D[j] <= spread_tolerance * sum(D)`. With the default
  /// 0 this is exactly the paper's test (the standard deviation of D is 0 iff
  /// all D[j] are equal). Must be >= 0.
  double spread_tolerance = 0.0;
  /// Vicinities (Section 4.2): groups of node ids; a worker steals only from
  /// the queues of its own group. Empty (default): one group of all nodes.
  /// A node in no group forms a group by itself (it never steals and is
  /// never stolen from); a node in two groups, or an id that is not a node,
  /// makes the constructor throw `sinew::error`.
  std::vector<std::vector<int>> vicinities{};
  /// Algorithm 2's "exponential back-off for steal attempts when work cannot
  /// be found": after a failed look for work a worker waits `backoff_min`,
  /// then twice as long after each further failure; once a wait of
  /// `backoff_max` was followed by another failure it sleeps (futex) until
  /// work is pushed where it may take it. Waits up to 2 us spin; longer ones
  /// yield the core between looks at the node's queue. A wait ends early
  /// when a look finds a task there.
  std::chrono::nanoseconds backoff_min{1'000};
  std::chrono::nanoseconds backoff_max{64'000};
  /// During a yielding wait, the least time between two looks at the node's
  /// queue (0: a look after every yield). Each look reads every shard's size,
  /// which a submitting thread writes on every push, so fewer looks keep idle
  /// workers off the submitter's cache lines. Must be >= 0.
  std::chrono::nanoseconds backoff_poll{8'000};
  /// Bind each worker to its core (real topologies only; skipped on
  /// synthetic ones, whose cpu ids are not the machine's). Failures ignored.
  bool pin = true;
};

/// Counters of `deal_scheduler` beyond `scheduler_stats` (since creation or
/// `reset_stats()`).
struct deal_stats {
  /// Submitted tasks dealt by Algorithm 1 (both thresholds passed) to each
  /// node, including those whose cheapest node was the local one.
  std::vector<std::uint64_t> dealt;
  /// Submitted tasks placed on a node named by `locality_hint::numa_node`
  /// (no D known), per node.
  std::vector<std::uint64_t> directed;
  /// Submitted tasks kept on the submitter's node: Algorithm 1's else branch
  /// (below the size threshold, or evenly spread), or no locality known.
  /// For threads that are not workers "the submitter's node" is round-robin.
  std::uint64_t kept_local = 0;
  /// Tasks (and parallel_for blocks) a worker took from its own node's queue
  /// that another worker of the same node had enqueued, or from the deque
  /// of another worker of its node.
  std::uint64_t steals_same_node = 0;
  /// Tasks a worker took from another node's queue (Algorithm 2's steals).
  std::uint64_t steals_remote = 0;
  /// Looks at a non-empty queue of another node of the vicinity that the
  /// threshold of Algorithm 2 refused (`sizeof(Q_i) <= distance(i, n) * C`).
  std::uint64_t steals_refused = 0;
  /// Sum over the tasks run (that had a D) of the bytes of D not on the node
  /// of the worker that ran them: `sum(D) - D[node]`.
  std::uint64_t remote_bytes = 0;
};

/// NUMA work-dealing scheduler (the `deal` policy,
/// [Muddukrishna15, Algorithms 1 and 2]).
///
/// Structure: one task queue per NUMA node ("There is a task queue per NUMA
/// node on NUMA systems"), one worker per core of the topology ("The
/// scheduler binds one thread to each core"), worker `w` on the node of its
/// core (synthetic `N x C`: node `w / C`). Queues are FIFO: "Tasks are added
/// at the front and removed from the back of task queues". Besides, each
/// worker has a Chase-Lev deque [ChaseLev05, Le13] that only workers of its
/// node take from, for the halves of the parallel_for blocks it splits and, on a one-node
/// topology (where nothing is dealt or stolen across nodes), for the tasks
/// it submits and a share of the node FIFO it takes at once: the fast path
/// of `steal`, so that `deal` costs nothing without NUMA.
///
/// **deal-work (Algorithm 1)**, at `submit`: D[j] = bytes of the task's data
/// on node j, from `hint.bytes_on_node` if given, else from `hint.reads`
/// (each buffer's `numa_node()` with its `bytes()`; unknown node -1 is
/// ignored). If there is no D (all zero) the task goes to `hint.numa_node`
/// when >= 0, else to the submitter's node (round-robin over nodes for
/// threads that are not workers). With a D, the task is dealt to
/// `choose_node(D, local)`: the node `i` minimising
/// `cost(i) = sum_j D[j] * distance(i, j)` when `sum(D) > size_threshold`
/// and D is not evenly spread (see `deal_options`), else it stays local.
///
/// **find-work (Algorithm 2)**: a worker runs tasks from its own node's
/// queue; when that is empty it visits the other nodes of its vicinity in
/// order of distance (`topology::nodes_by_distance`) and takes ONE task from
/// the first queue `Q_i` with `sizeof(Q_i) > distance(i, n) * C` (`n` its
/// node, `C` = `cores_per_node()`, distances as the topology gives them,
/// i.e. SLIT units with 10 = local, not normalised: the paper reads them
/// from "OS tables"). Failed looks back off exponentially, then the worker
/// sleeps; a push to node q wakes a sleeper of q, or, when q has none, one
/// of the nearest node whose workers the threshold now lets steal from q.
///
/// `parallel_for` is as in `steal_scheduler` (halving to the grain, the
/// caller helps; an outside caller sleeps): its segments go to the caller's
/// node queue (an outside caller's: round-robin), or, with
/// `parallel_for_at`, to the node Algorithm 1 picks for the loop's data.
/// The destructor runs every task already submitted (thresholds and
/// vicinities are ignored while it drains), then joins the workers.
///
/// `task_group::wait` on a worker helps likewise: it runs the tasks
/// find-work gives it until the group's are done (nested groups cannot
/// deadlock with every worker waiting), sleeping instead once it is
/// `workers::max_help_depth` (64) tasks deep; an outside thread sleeps.
///
/// Caveat (inherent in the policy): a task is only run by another node when
/// its queue is long enough, so a task that *blocks* (other than in
/// `task_group::wait` or `parallel_for`) waiting for tasks of its own node
/// can starve if every worker of that node blocks too.
///
/// Select it for the default scheduler with `SINEW_SCHEDULER=deal`: one
/// worker per core of `topology::current()`, or with `SINEW_THREADS=N` one
/// node of N cores (`make_scheduler("deal", {.threads = N})`).
///
/// \code
/// auto topo = sinew::topology::synthetic(4, 4, {{10, 20, 30, 40}, {20, 10, 20, 30},
///                                               {30, 20, 10, 20}, {40, 30, 20, 10}});
/// sinew::deal_scheduler s(topo);               // 16 workers, 4 node queues
/// std::vector<std::uint64_t> D = {0, 0, 64 << 20, 0};   // 64 MiB of input on node 2
/// sinew::task_group g(s);
/// g.run([] { work(); }, {.bytes_on_node = D});  // dealt to node 2
/// g.wait();
/// s.deal_stats().dealt[2];                     // 1
/// s.choose_node(D, 0);                         // 2
/// s.may_steal(1, 2, 200);                      // 200 > 20 * 4: true
/// \endcode
class deal_scheduler final : public scheduler {
 public:
  /// Throws `sinew::error` for bad options (see `deal_options`).
  explicit deal_scheduler(const topology& t = topology::current(), deal_options o = {});
  ~deal_scheduler() override;
  deal_scheduler(const deal_scheduler&) = delete;
  deal_scheduler& operator=(const deal_scheduler&) = delete;

  const char* name() const noexcept override { return "deal"; }
  unsigned concurrency() const noexcept override;
  void submit(task_function fn, const locality_hint& hint = {}) override;
  /// From a worker, `submit`; from another thread, after a grace period on
  /// a timer thread, so that no worker wakes for a check its submitter
  /// most likely made needless (scheduler::submit_backup).
  void submit_backup(task_function fn) override;
  /// A task_group's task: the counter travels in the task (no wrapper).
  void submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint = {}) override;
  /// On a worker: runs other tasks until the group's are done; on any other
  /// thread: sleeps.
  void wait_counted(detail::task_counter& c) noexcept override;
  /// The same for a graph run awaited on a worker (`run_future::wait`).
  void help_until(detail::help_latch& l) override;
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override;
  void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                       detail::function_ref<void(std::size_t, std::size_t)> body) override;
  /// Per worker: tasks, busy time, steals (same-node + remote, as in
  /// `deal_stats`), steal_attempts (looks at non-empty queues of other nodes
  /// of the vicinity: refused, lost or successful).
  scheduler_stats stats() const override;
  void reset_stats() override;
  sinew::deal_stats deal_stats() const;

  /// Algorithm 1's decision for a task whose data is distributed as `D` (one
  /// entry per node) submitted on node `local_node`: `local_node` unless
  /// `sum(D) > size_threshold` and `max(D) - min(D) > spread_tolerance *
  /// sum(D)`; then the node `i` with the least `sum_j D[j] * distance(i, j)`,
  /// ties going to the one holding the most of D (fewest remote bytes),
  /// then to `local_node`, then to the lowest index. Throws `sinew::error` if `D.size() != nodes` or
  /// `local_node` is not a node.
  int choose_node(std::span<const std::uint64_t> D, int local_node) const;
  /// Algorithm 2's test: may a worker of `thief_node` take one task from
  /// `victim_node`'s queue holding `victim_queue_len` tasks? Own node: when
  /// non-empty. Another node: when in the same vicinity and
  /// `victim_queue_len > distance(victim_node, thief_node) * cores_per_node`.
  bool may_steal(int thief_node, int victim_node, std::size_t victim_queue_len) const;
  /// Algorithm 2's whole choice for an idle worker of `thief_node` when the
  /// node queues hold `queue_lens[j]` tasks: its own node if non-empty, else
  /// the first of the other nodes of its vicinity, nearest first
  /// (`topology::nodes_by_distance`), that `may_steal` allows; -1: none
  /// (back off). What the workers do, one look at a time. Throws
  /// `sinew::error` if `queue_lens.size() != nodes` or the node is bad.
  ///
  /// \code
  /// s.find_victim(0, std::vector<std::size_t>{0, 81, 500, 0});   // 1: nearest above its threshold
  /// \endcode
  int find_victim(int thief_node, std::span<const std::size_t> queue_lens) const;

  /// The topology the scheduler was built for.
  const topology& topo() const noexcept;
  /// Node of worker `w` (w < concurrency()).
  int worker_node(unsigned w) const;
  /// Node of the calling thread if it is one of this scheduler's workers, else -1.
  int current_node() const noexcept override;
  const topology* numa_topology() const noexcept override { return &topo(); }

  struct impl;  // public name so the implementation's helpers can use it

 private:
  void submit_counted_impl(task_function&& fn, detail::task_counter* c, const locality_hint& hint);
  std::unique_ptr<impl> p_;
};

}  // namespace sinew
