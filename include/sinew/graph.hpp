#pragma once
/// \file graph.hpp
/// `sinew::graph` compiles a skeleton tree into stages joined by bounded
/// queues and runs it. `run` returns at once with a `run_future`; the same
/// graph may be run again (or several times at once) with new inputs.
///
/// \code
/// sinew::graph g(sinew::pipeline(sinew::map<GaussianNoise>(),
///                                sinew::farm(sinew::map<Solarize>(), 4),
///                                sinew::map<Mirror>()));
/// auto f = g.run(images, results);   // host work continues meanwhile
/// f.get();                           // rethrows a leaf's error, naming its node
/// std::cout << f.stats().units_out;
/// \endcode
///
/// Runtime invariants (docs/runtime.md): a stage takes a unit from its input
/// queue only after reserving a slot in its output queue, so at most
/// `sum(capacities) + 2` units are alive; stages are tasks on the scheduler,
/// activated when their input has data and their output has room (no thread
/// per stage, no busy waiting); end of stream is a unit that leaves every
/// stage after all units before it.
#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <sinew/node.hpp>
#include <sinew/scheduler.hpp>
#include <sinew/sink.hpp>
#include <sinew/source.hpp>

namespace sinew {

struct graph_options {
  /// Scheduler to run on; null = default_scheduler().
  sinew::scheduler* scheduler = nullptr;
  /// Capacity of every queue not given one by `node::capacity`;
  /// 0 = twice the concurrency of the stages on either side, at least 2.
  std::size_t capacity = 0;
  /// Units one stage activation processes before yielding its worker.
  unsigned batch = 256;
};

/// Per stage counters of one run.
struct stage_stats {
  std::string path;
  unsigned concurrency = 1;
  std::size_t capacity = 0;        ///< of the input queue
  std::size_t high_water = 0;      ///< most units the input queue held
  std::size_t queued = 0;          ///< units in the input queue now
  std::uint64_t units = 0;         ///< data units processed
  std::uint64_t busy_ns = 0;       ///< time in the leaf
  std::uint64_t activations = 0;   ///< tasks the stage ran as
};

struct run_stats {
  std::uint64_t units_in = 0;   ///< units the source produced
  std::uint64_t units_out = 0;  ///< units the sink received
  std::uint64_t units_alive_max = 0;  ///< most units alive at once
  std::uint64_t units_alive = 0;      ///< units alive now (0 once the run ended)
  std::size_t capacity_total = 0;     ///< sum of queue capacities
  double seconds = 0;                 ///< start to end of stream at the sink
  std::vector<stage_stats> stages;    ///< in graph order; the sink is last
};

namespace detail {
struct run_state;
struct compiled_graph;
}  // namespace detail

/// Handle to one run.
class run_future {
 public:
  run_future() = default;
  explicit run_future(std::shared_ptr<detail::run_state> s) : s_(std::move(s)) {}
  /// Waits for the end; rethrows `node_error` if a node failed, `cancelled`
  /// after `cancel()`.
  void get();
  void wait() const;
  /// True if the run ended within `d`.
  bool wait_for(std::chrono::milliseconds d) const;
  bool ready() const;
  /// Aborts: the source stops, units in flight are released unprocessed, and
  /// `get()` throws `cancelled`.
  void cancel();
  /// Ends the stream early: the source stops, every unit already accepted is
  /// processed and delivered, and `get()` returns normally.
  void stop();
  /// Counters so far (final once the run has ended).
  run_stats stats() const;
  bool valid() const noexcept { return s_ != nullptr; }

 private:
  std::shared_ptr<detail::run_state> s_;
};

class graph {
 public:
  /// Compiles `root`; throws graph_error (with the node path) if the tree is
  /// inconsistent, e.g. a stage reads types its predecessor does not write.
  explicit graph(node root, graph_options o = {});
  ~graph();
  graph(graph&&) noexcept;
  graph& operator=(graph&&) noexcept;

  run_future run(source src, sink snk);
  /// As above; a stop request on `token` cancels the run (see run_future::cancel).
  ///
  /// \code
  /// std::stop_source stop;
  /// auto f = g.run(src, sink, stop.get_token());
  /// stop.request_stop();   // f.get() throws sinew::cancelled
  /// \endcode
  run_future run(source src, sink snk, std::stop_token token);
  run_future run(source src) { return run(std::move(src), discard()); }
  /// One unit per input item, results into `out[k]`.
  template <class I, class O>
  run_future run(std::vector<I>& in, std::vector<O>& out) { return run(from(in), into(out)); }

  /// Stage list, one line per stage: path, concurrency, in place, order.
  std::string describe() const;
  std::size_t stage_count() const;
  const node& root() const;

 private:
  std::shared_ptr<const detail::compiled_graph> g_;
};

}  // namespace sinew
