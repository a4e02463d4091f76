#pragma once
// Internal: one run of a graph: its channels, stages, sources, units and end
// (docs/runtime.md).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <sinew/detail/ring.hpp>
#include <sinew/detail/scalable_new.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/engine/trace.hpp>
#include <sinew/schedulers/scheduler.hpp>

#include "compiled_graph.hpp"
#include "latency_histogram.hpp"
#include "serial_chain.hpp"
#include "unit_pool.hpp"

namespace sinew::detail {

class channel;
struct junction_rt;
struct region_rt;
struct stage_rt;

/// One source of a run: on a thread of its own (sources that may block,
/// source_loop) or as a stage on the scheduler (source_activation).
struct source_rt : scalable_new {
  source src;
  std::uint32_t index = 0;  // the units' origin
  channel* out = nullptr;
  std::unique_ptr<stage_rt> stage;  // null when the source has a thread
  std::thread thread;
  std::atomic<bool> done{false};
  std::uint64_t next_seq = 0;  // source stage only
  std::optional<std::uint64_t> size;  // the source's size_hint()
  type_list types;  // what its units must hold
  std::string first_path;  // the vertex its channel feeds (errors in the input)
  alignas(cache_line) std::atomic<std::uint64_t> units{0}, bytes{0}, records{0};  // one writer: the source

  source_rt() : src(std::shared_ptr<source_impl>()) {}  // its source is given by run_state::arm
  ~source_rt();
};

/// Owns everything of one run and outlives its tasks (each holds a
/// reference): its channels, its stages (tree stages, then junctions, then
/// one per sink), its sources and units. The run ends when end of stream has
/// reached every sink. When the last reference goes, a run that ended
/// holding no unit is reset and kept for the graph's next run
/// (compiled_graph::runs): that run builds none of these objects again.
///
/// \code
/// auto s = run_state::make(compiled, std::move(sources), std::move(sinks));
/// s->start();                  // returns at once; s->done_latch opens at the end
/// return run_future(std::move(s));
/// \endcode
struct run_state : scalable_new, std::enable_shared_from_this<run_state> {
  enum : int { running = 0, stopping = 1, failed = 2, cancelled = 3 };

  /// A run of `g` with these endpoints (one for each of g's, in its order):
  /// a kept run of g's, or a new one.
  static std::shared_ptr<run_state> make(std::shared_ptr<const compiled_graph> g, std::vector<source> srcs,
                                         std::vector<sink> snks);
  /// Builds the run's objects (make() then gives it its endpoints).
  explicit run_state(std::shared_ptr<const compiled_graph> g);
  ~run_state();
  void start();
  /// Source on its own thread (sources that may block).
  void source_loop(source_rt& s);
  /// Source as a stage on the scheduler (sources that never block).
  stage_rt* source_activation(source_rt& s);
  work_unit* make_unit(source_rt& s, std::uint64_t seq);  // null: end of stream or failure
  /// Raises the capacity of the channels of default capacity (and the
  /// windows of their regions) for units of `bytes` (the first unit's).
  void grow_capacities(std::size_t bytes);
  /// Bytes of a tree's result layer for a unit of shape `in` (0: in place or
  /// a dag), for the first unit's size when its first stage makes the layer.
  std::size_t result_bytes(const shape& in) const;
  /// A tree's sink that may supply its result layer (the source then adds
  /// it to each unit); null when the tree's first stage makes it.
  sink_impl* result_provider = nullptr;
  bool growable = false;  // some channel has cap_max > cap
  /// Some source may wait for data (a pipe, a socket): sinks then write what
  /// they buffer whenever they run dry (sink_impl::idle).
  bool live_sources = false;
  std::atomic<bool> grown{false};  // capacities grow once, for the first unit made
  /// `wake`: notify the consumer (the source stage's leave() claims it).
  void push_eos(source_rt& s, std::uint64_t seq, bool wake);
  /// The first activation of the first task-mode source: submitted as a
  /// task by start(), and run by whichever comes first, that task or a
  /// caller of run_future::get()/wait() (which then runs the graph's stages
  /// itself instead of sleeping while workers wake up: a short run ends on
  /// the caller's thread).
  std::atomic<bool> start_pending{false};
  source_rt* start_source = nullptr;
  /// The run itself until its start has run: the queued start task holds
  /// only a weak reference, so that a start the caller ran inline leaves
  /// no task keeping a finished run (and its unit pool) alive.
  std::shared_ptr<run_state> start_keep;
  void run_start();
  /// A caller of get()/wait() may run the stages: not when a stage places
  /// its buffers (`standard` placement records the node of the worker that
  /// writes them; a thread outside the scheduler has none).
  bool caller_may_run = true;
  bool reserve_blocking(channel& c, bool give_up_when_stopping, const source_rt& s);
  /// The source should go on: running, or stopping with a source whose
  /// buffered items count as accepted (drains_on_stop).
  bool producing(const source_rt& s) const;

  work_unit* acquire_unit() { return units->acquire(); }
  void release_unit(work_unit* u) { units->release(u); }
  void fail(const std::string& path, std::exception_ptr e);
  void request(int how);  // stop or cancel
  /// End of stream reached a sink; the last one ends the run.
  void sink_finished();
  void complete();
  void wake_all();
  bool dropping() const noexcept { return state.load(std::memory_order_acquire) >= failed; }

  std::shared_ptr<const compiled_graph> g;  // null while kept
  std::uint64_t id = 0;  // sinew::current_run_id(): unique in the process, never 0
  bool reused = false;  // make() took it from the graph's cache (run_stats::reused)
  // Read on every unit by every stage: kept away from written lines.
  trace* const tr;  // null: not traced
  std::uint64_t latency_mask = 0;  // seq & mask == 0: the unit is timed
  bool time_latency = false;
  scheduler* sched;
  std::vector<std::unique_ptr<channel>> channels;
  /// Tree stages (as g->stages), then junctions (as g->junctions), then
  /// sinks (as g->sinks).
  std::vector<std::unique_ptr<stage_rt>> stages;
  std::vector<std::unique_ptr<junction_rt>> junctions;
  std::vector<std::unique_ptr<region_rt>> regions;  // as g->regions
  std::vector<std::unique_ptr<serial_chain>> chains;  // found at start(), once the sources' stages exist
  std::vector<std::unique_ptr<source_rt>> sources;
  std::vector<sink> sinks;
  std::size_t first_sink = 0;  // index of the first sink's stage
  std::atomic<std::size_t> sinks_open{0};

  std::atomic<int> state{running};
  std::atomic<bool> stop_flag{false};  // seen by sources through unit_builder
  std::mutex err_m;
  std::exception_ptr error;

  std::unique_ptr<unit_pool> units;
  latency_histogram latency;
  scheduler_stats sched_start, sched_end;  // sched_end: under done_m once done
  std::atomic<bool> trace_live{false};
  alignas(cache_line) char pad_[1] = {};
  std::chrono::steady_clock::time_point t0, t1;
  std::mutex done_m;
  std::condition_variable done_cv;
  bool done = false;
  help_latch done_latch;  // opened after done: the caller of wait() helps in the scheduler until then
  std::mutex join_m;  // get() joins the source threads under it

  struct canceller {
    std::weak_ptr<run_state> w;
    void operator()() const {
      if (auto s = w.lock()) s->request(cancelled);
    }
  };
  std::unique_ptr<std::stop_callback<canceller>> on_stop;

 private:
  /// Binds the run to its endpoints, as new: a new id, its state running.
  void arm(std::vector<source> srcs, std::vector<sink> snks);
  /// The last reference went: parks the run in its graph's cache, or
  /// deletes it (the shared_ptr's deleter).
  static void retire(run_state* s) noexcept;
  /// Releases the endpoints, the source threads and the error; true when
  /// the run can serve again (it started, ended running or stopping, and
  /// holds no unit), its objects then reset as built.
  bool park() noexcept;
  /// start() found the serial chains: they, and the stages of the sources
  /// that never block, are kept for a next run with the same sources that
  /// block.
  bool chained_ = false;
  bool started_ = false;  // start() returned
};

}  // namespace sinew::detail
