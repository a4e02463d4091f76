#pragma once
/// \file task_graph.hpp
/// A graph of tasks and their dependencies, built once and run many times
/// on any scheduler: "A before B and C, both before D".
///
/// A task runs when every predecessor has finished. A *condition* task (a
/// callable returning an integer k) runs only its k-th successor, at once,
/// whatever that successor's other predecessors; an edge out of a condition
/// is *weak* (it does not count among the successor's predecessors), which
/// is how branches and loops are written. A task none of whose predecessors
/// run is skipped, and a run ends when no task is left to run (the
/// semantics of Taskflow's conditional tasking).
///
/// \code
/// sinew::task_graph g("diamond");
/// auto [a, b, c, d] = g.emplace([] { load(); }, [] { left(); }, [] { right(); }, [] { merge(); });
/// a.precede(b, c);         // a before b and c
/// d.succeed(b, c);         // d after both
/// g.run(sched).wait();     // rethrows what a task threw
/// g.run_n(sched, 100).wait();
///
/// // A loop: body runs, then cond sends control back to body (0) or on (1).
/// int i = 0;
/// auto init = g2.emplace([&] { i = 0; });
/// auto body = g2.emplace([&] { ++i; });
/// auto cond = g2.emplace([&] { return i < 10 ? 0 : 1; });
/// auto done = g2.emplace([] {});
/// init.precede(body);
/// body.precede(cond);
/// cond.precede(body, done);
/// \endcode
///
/// Runs of one graph may overlap (each has its own counts), but a task's
/// function is then called concurrently by the runs; the graph must not be
/// changed while a run is in flight (that throws), and its destructor waits
/// for its runs.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sinew/schedulers/scheduler.hpp>

namespace sinew {

class task_graph;
class task_graph_run;

namespace detail {
struct task_node;
struct task_run;
}  // namespace detail

/// One task of a `task_graph`: a handle to set its edges, name and
/// placement. Valid while its graph lives (and is not cleared).
///
/// \code
/// auto t = g.emplace([] { work(); }).name("work").on_node(1);
/// t.precede(u);
/// \endcode
class task_handle {
 public:
  task_handle() = default;
  /// This task before each of `ts` (an edge from a condition task is weak,
  /// its successors numbered in the order they are added).
  template <class... T>
  task_handle& precede(const T&... ts) {
    (link(*this, ts), ...);
    return *this;
  }
  /// Each of `ts` before this task.
  template <class... T>
  task_handle& succeed(const T&... ts) {
    (link(ts, *this), ...);
    return *this;
  }
  /// Name shown in errors and DOT (default: "task <index>").
  task_handle& name(std::string n);
  const std::string& name() const;
  /// Placement hint: run on NUMA node `node` where the policy can (`deal`,
  /// `tbb` over a topology); -1 clears it.
  task_handle& on_node(int node);
  /// Placement hint: bytes the task reads on each NUMA node (one entry per
  /// node of the scheduler's topology; `deal` picks the cheapest node).
  task_handle& reads(std::vector<std::uint64_t> bytes_on_node);
  std::size_t successors() const;
  /// Predecessors, strong and weak.
  std::size_t predecessors() const;
  bool is_condition() const;
  bool empty() const noexcept { return n_ == nullptr; }
  bool operator==(const task_handle& o) const noexcept { return n_ == o.n_; }

 private:
  friend class task_graph;
  task_handle(task_graph* g, detail::task_node* n) : g_(g), n_(n) {}
  static void link(const task_handle& from, const task_handle& to);
  task_graph* g_ = nullptr;
  detail::task_node* n_ = nullptr;
};

/// A run (or N runs, one after the other) of a `task_graph`. Move-only;
/// the destructor waits for the run (without rethrowing).
///
/// \code
/// auto r = g.run(sched);
/// if (user_gave_up) r.cancel();   // tasks not yet started are skipped
/// r.wait();                       // rethrows a task's exception, or sinew::cancelled
/// \endcode
class task_graph_run {
 public:
  task_graph_run() = default;
  task_graph_run(task_graph_run&&) noexcept = default;
  task_graph_run& operator=(task_graph_run&& o) noexcept;
  ~task_graph_run();

  /// Waits until the run ends: a worker of the scheduler runs other tasks
  /// meanwhile, another thread sleeps (or, under `tbb`, works in the
  /// arena). Rethrows the first exception a task threw (the rest of the run
  /// was then skipped), or throws `sinew::cancelled` when `cancel()` cut
  /// the run short (a cancel that came too late to skip anything is not
  /// an error).
  void wait();
  /// Whether the run has ended.
  bool ready() const;
  /// No task starts from now on; tasks running finish. Idempotent.
  void cancel();
  /// Iterations (whole runs of the graph) finished so far.
  std::size_t iterations() const;
  bool valid() const noexcept { return r_ != nullptr; }

 private:
  friend class task_graph;
  friend struct detail::task_run;
  explicit task_graph_run(std::shared_ptr<detail::task_run> r) : r_(std::move(r)) {}
  std::shared_ptr<detail::task_run> r_;
};

class task_graph {
 public:
  explicit task_graph(std::string name = "task_graph");
  task_graph(const task_graph&) = delete;
  task_graph& operator=(const task_graph&) = delete;
  /// Waits for the runs in flight.
  ~task_graph();

  /// Adds a task. `f()` returning void is a plain task; returning an
  /// integer makes a condition task (its result picks the successor to run;
  /// out of range: none).
  template <class F>
  task_handle emplace(F&& f) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    if constexpr (std::is_void_v<R>) {
      return add_work(std::function<void()>(std::forward<F>(f)));
    } else {
      static_assert(std::is_integral_v<R>, "sinew::task_graph::emplace: a task returns void or an integer");
      if constexpr (std::is_same_v<R, int>)
        return add_condition(std::function<int()>(std::forward<F>(f)));
      else
        return add_condition([g = std::decay_t<F>(std::forward<F>(f))]() mutable { return static_cast<int>(g()); });
    }
  }
  /// Adds several tasks: `auto [a, b] = g.emplace(fa, fb);`
  template <class F1, class F2, class... Fs>
  std::array<task_handle, 2 + sizeof...(Fs)> emplace(F1&& f1, F2&& f2, Fs&&... fs) {
    return {emplace(std::forward<F1>(f1)), emplace(std::forward<F2>(f2)), emplace(std::forward<Fs>(fs))...};
  }
  /// Adds a task that runs all of `sub` (on the same scheduler) and waits
  /// for it, helping; an exception in `sub` fails this task, and stopping
  /// this graph's run stops `sub`'s. `sub` must outlive this graph's runs.
  task_handle compose(task_graph& sub);

  const std::string& name() const noexcept { return name_; }
  std::size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  /// Removes every task (handles become invalid).
  void clear();

  /// Starts one run on `s` (a graph without tasks ends at once).
  task_graph_run run(scheduler& s);
  /// Runs the graph `n` times, each after the previous has ended.
  task_graph_run run_n(scheduler& s, std::size_t n);
  /// Runs the graph again and again while `stop()` returns false (checked
  /// before each run, on the thread that ended the previous one).
  task_graph_run run_until(scheduler& s, std::function<bool()> stop);

  /// Throws `graph_error` naming the tasks if the graph cannot run: a cycle
  /// of plain (strong) edges, no task without predecessors, or a graph
  /// composed into itself (through others). `run` checks
  /// it too (once per change of the graph).
  void validate() const;

  /// Graphviz DOT: condition tasks are diamonds, their edges dashed and
  /// numbered; composed graphs are clusters.
  std::string dot() const;
  void dot(std::ostream& os) const;

 private:
  friend class task_handle;
  friend struct detail::task_run;
  task_handle add_work(std::function<void()> f);
  task_handle add_condition(std::function<int()> f);
  detail::task_node& add_node();
  void check_idle(const char* what) const;
  task_graph_run start(scheduler& s, std::size_t n, std::function<bool()> stop);
  static void start(const std::shared_ptr<detail::task_run>& r);
  // The chain of graphs composed into `g` that leads back to `root`, or "".
  static std::string composition_cycle(const task_graph* root, const task_graph* g, unsigned depth);

  std::string name_;
  std::vector<std::unique_ptr<detail::task_node>> nodes_;
  // Tasks without predecessors, filled by validate() while `checked_`.
  mutable std::mutex check_m_;
  mutable std::vector<detail::task_node*> sources_;
  mutable bool loops_ = false;  // has a condition task: a task may run again in one iteration
  mutable bool checked_ = false;
  std::atomic<std::uint32_t> active_{0};  // runs in flight
};

}  // namespace sinew
