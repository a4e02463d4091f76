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
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sinew/engine/dag.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

namespace sinew {

class trace;

struct graph_options {
  /// Scheduler to run on; null = default_scheduler().
  sinew::scheduler* scheduler = nullptr;
  /// Capacity of every queue not given one by `node::capacity`;
  /// 0 = twice the concurrency of the stages on either side, at least 2.
  std::size_t capacity = 0;
  /// Units one stage activation processes before yielding its worker.
  unsigned batch = 256;
  /// Records leaf executions, map chunks, source and sink activity
  /// (see trace.hpp); null = no tracing (one branch per unit). Must outlive
  /// the runs.
  sinew::trace* trace = nullptr;
  /// Unit latency (source accepted -> sink consumed) is timed on one unit in
  /// `latency_every` (rounded up to a power of two; 1 = every unit, 0 =
  /// none): two clock reads per timed unit.
  unsigned latency_every = 16;
  /// Whether `run_stats::scheduler` is filled in: the scheduler's counters
  /// are read when a run starts and when it ends (every worker's, about
  /// 0.3-0.6 us each on 16 workers, on the run's path). Off: left empty.
  ///
  /// \code
  /// sinew::graph g(sinew::map<F>(), {.scheduler_stats = true});
  /// auto run = g.run(sinew::from_arrays(a), sinew::into_arrays(b));
  /// run.get();
  /// std::printf("%.2f\n", run.stats().scheduler.load_balance());
  /// \endcode
  bool scheduler_stats = false;
  /// NUMA placement of the buffers every stage writes (its output layers;
  /// [Muddukrishna15, Tables 1-3]) over the scheduler's topology
  /// (`scheduler::numa_topology()`, else `topology::current()`), unless the
  /// stage's node says otherwise (`node::placement`). Unset: buffers are not
  /// placed (first touch, no recorded node). Maps over placed data pass it
  /// to the scheduler (`parallel_for_at`): `deal` runs their chunks on the
  /// data's node. `automatic` applies Table 3 per unit: allocations = the
  /// stage's output buffers, tasks = many once the stage has split a unit
  /// into more than one chunk each so far (one before).
  ///
  /// \code
  /// sinew::deal_scheduler s;
  /// sinew::graph g(sinew::pipeline(sinew::map<A>(), sinew::map<B>()),
  ///                {.scheduler = &s, .placement = sinew::placement::coarse});
  /// \endcode
  std::optional<sinew::placement> placement{};
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
  /// Idle because its input was empty while the stream was live (from the
  /// end of an activation that found no input to the start of the next).
  std::uint64_t wait_in_ns = 0;
  /// Blocked by back pressure: its output queue (or ordered window) was full
  /// (from the end of an activation that found no room to the next start).
  std::uint64_t wait_out_ns = 0;
  std::uint64_t bytes = 0;         ///< layer-0 bytes of the units it processed (0: a junction reads none)
  /// Chunks the units were split into (maps: scheduler parallel_for blocks
  /// run, summed over units; 0 for stages that never split).
  std::uint64_t chunks = 0;
  /// Named counters added by components while running this stage
  /// (`add_stage_counter`), e.g. device shares of a balanced map; sorted.
  std::vector<std::pair<std::string, double>> counters;
};

/// Unit latency, source accepted to sink consumed, over the timed units
/// (graph_options::latency_every). Percentiles come from a log-bucketed
/// histogram (8 buckets per power of two: within 12.5%), capped at max.
struct latency_stats {
  std::uint64_t samples = 0;
  std::uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

/// Adds `v` to the counter `name` of the stage the calling thread is running
/// (reported in `stage_stats::counters`); does nothing outside a stage.
///
/// \code
/// sinew::add_stage_counter("share.gpu0", double(gpu_elems));
/// \endcode
void add_stage_counter(std::string_view name, double v);

/// Units and layer-0 bytes through one named source or sink.
struct endpoint_stats {
  std::string name;
  std::uint64_t units = 0;
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;  ///< records of those units (a unit that is not a batch is one)
  std::string report;  ///< the endpoint's own account (source_impl::report), or empty
};

struct run_stats {
  std::uint64_t units_in = 0;   ///< units the sources produced
  std::uint64_t units_out = 0;  ///< units the sinks received
  std::uint64_t records_in = 0;   ///< records in the sources' units (records.hpp)
  std::uint64_t records_out = 0;  ///< records in the units the sinks received
  std::uint64_t units_alive_max = 0;  ///< most units alive at once
  std::uint64_t units_alive = 0;      ///< units alive now (0 once the run ended)
  std::size_t capacity_total = 0;     ///< sum of queue capacities
  double seconds = 0;                 ///< start to end of stream at the sink
  /// Tree stages in graph order, then a dag's junctions, then the sinks
  /// (a tree's one sink is last).
  std::vector<stage_stats> stages;
  std::uint64_t bytes_in = 0;   ///< layer-0 bytes of the units the sources produced
  std::uint64_t bytes_out = 0;  ///< layer-0 bytes of the units the sinks received
  /// Per source and per sink, in the order the graph declares them (a
  /// tree's: "source" and "sink").
  std::vector<endpoint_stats> sources, sinks;
  latency_stats latency;
  /// The scheduler's counters over the run (end minus start; other work on
  /// the same scheduler meanwhile is included): tasks, steals per worker.
  /// Empty unless `graph_options::scheduler_stats`.
  scheduler_stats scheduler;
  bool done = false;  ///< the run has ended (the counters are final)
  /// The run's channels, stages and units are those of a finished run of
  /// the same graph, reset (a run that ended holding no unit is kept for
  /// the next; one that failed or was cancelled is not).
  bool reused = false;
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
  /// Compiles a dag (dag.hpp): every tree as above, and its junctions,
  /// sources and sinks; throws graph_error naming the vertex when an edge
  /// joins types that differ or an output is not connected.
  explicit graph(const dag& d, graph_options o = {});
  ~graph();
  graph(graph&&) noexcept;
  graph& operator=(graph&&) noexcept;

  /// Runs a graph of one source and one sink (a tree, or such a dag).
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

  /// Sources and sinks by the names a dag gave them.
  using named_sources = std::vector<std::pair<std::string, source>>;
  using named_sinks = std::vector<std::pair<std::string, sink>>;
  /// Runs a dag: every source and sink it declares, each given once by name
  /// (graph_error names the one missing or unknown).
  ///
  /// \code
  /// g.run({{"left", sinew::from(a)}, {"right", sinew::from(b)}},
  ///       {{"out", sinew::for_each(print)}}).get();
  /// \endcode
  run_future run(named_sources srcs, named_sinks snks, std::stop_token token = {});

  /// Stage list, one line per stage: path, concurrency, in place, order;
  /// then a dag's junctions and its edges.
  std::string describe() const;
  std::size_t stage_count() const;
  /// The tree (empty for a graph built from a dag).
  const node& root() const;

 private:
  run_future start(std::vector<source> srcs, std::vector<sink> snks, std::stop_token token);
  friend std::string to_dot(const graph& g, const run_stats* annotate);
  std::shared_ptr<const detail::compiled_graph> g_;
};

}  // namespace sinew
