#pragma once
// Internal: one stage of a run, activated as scheduler tasks
// (docs/runtime.md, "Activation" and "End of stream").
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sinew/detail/ring.hpp>
#include <sinew/detail/scalable_new.hpp>
#include <sinew/engine/node.hpp>

#include "stage_placement.hpp"
#include "stage_scheduler.hpp"

namespace sinew::detail {

class channel;
struct junction_rt;
struct region_rt;
struct run_state;
struct serial_chain;
struct source_rt;
class sink_impl;

/// What a stage activation that ended was waiting for (low bit of the time
/// stamp in stage_rt::idle_since).
enum : std::uint64_t { wait_input = 0, wait_output = 1 };

/// A stage between its input and output channels: at most `max_active`
/// activations at once, each a loop of reserve (output), take (input),
/// process, push, ended by an empty input, a full output or the batch.
///
/// \code
/// stage.notify();   // after a push into its input: runs an activation if it has work and a free slot
/// \endcode
struct stage_rt : scalable_new {
  run_state* run = nullptr;
  const stage_spec* spec = nullptr;  // null: a sink, a junction or a source
  channel* in = nullptr;   // null: a source
  channel* out = nullptr;  // null: a sink
  unsigned max_active = 1;
  source_rt* src = nullptr;       // a source's stage
  sink_impl* snk = nullptr;       // a sink's stage
  junction_rt* junction = nullptr;  // a junction's stage (in, out: its first input and output)
  serial_chain* chain = nullptr;    // the serial chain it is in, if any
  /// A tree's first stage that works in place on units a broadcast shares:
  /// it copies the shared buffers of layer 0 first.
  bool copy_shared = false;
  /// A tree's first stage whose sink supplies no memory: it adds the tree's
  /// result layer to each unit (compiled_graph::result).
  const layer_plan* result = nullptr;
  std::unique_ptr<stage_scheduler> sched;  // what leaves see as their scheduler
  std::unique_ptr<stage_placement> place;  // null: outputs not placed
  // Read by the neighbouring stages on every push and pop: its own line.
  alignas(cache_line) std::atomic<unsigned> active{0};
  // Written by this stage's activations only.
  alignas(cache_line) std::atomic<std::size_t> inflight{0};
  std::atomic<work_unit*> eos{nullptr};
  std::atomic<std::uint64_t> units{0}, busy_ns{0}, activations{0}, bytes{0};
  std::atomic<std::uint64_t> records{0};  // a sink's: records of the units it received
  // Waits (see docs/observability.md): the time an activation that found no
  // input / no room ended, with the reason in the low bit; 0 = not waiting.
  std::atomic<std::uint64_t> idle_since{0}, wait_in_ns{0}, wait_out_ns{0};
  std::atomic<bool> eos_seen{false};  // no waits are counted after end of stream
  alignas(cache_line) std::atomic<std::uint64_t> chunks{0};
  std::mutex counters_m;
  std::map<std::string, double, std::less<>> counters;  // add_stage_counter
  /// Moving average of the time one unit takes here (UINT32_MAX: unknown).
  std::atomic<std::uint32_t> unit_cost_ns{UINT32_MAX};
  /// The time one unit took in the last activation that took any.
  std::atomic<std::uint32_t> last_cost_ns{UINT32_MAX};
  /// Below this per-unit cost a stage defers waking its consumer to the end
  /// of its activation (see process()).
  static constexpr std::uint32_t defer_below_ns = 2000;
  bool cheap() const noexcept { return unit_cost_ns.load(std::memory_order_relaxed) < defer_below_ns; }
  /// Adds busy time since t0; returns the time now.
  std::uint64_t account(std::uint64_t t0, unsigned units_done);
  /// Start of an activation at t0: ends the wait the last one began.
  void end_wait(std::uint64_t t0) noexcept;
  alignas(cache_line) std::vector<region_rt*> admits;  // ordered regions entered here
  std::vector<region_rt*> inside;  // ordered regions containing this stage

  /// As built, for the graph's next run: counts, costs and waits cleared
  /// (run_state::arm; no other thread uses the stage meanwhile).
  void restart();
  bool has_work() const noexcept;
  bool enter_regions();
  void leave_regions(std::size_t n);
  /// Takes an activation slot if there is work and a free one (full fence).
  bool claim();
  /// claim(), then run the activation as a scheduler task.
  void notify();
  /// notify() unless the stage is visibly running (no fence).
  void hint();
  /// With `a` activations running, none more is needed now (replica_rule.hpp).
  bool enough_running(unsigned a) const noexcept;
  /// Time between two units it takes from one of its inputs, from its
  /// measured cost (UINT32_MAX: not known yet): a zip or join takes one from
  /// every input per unit it passes on.
  std::uint32_t take_interval_ns() const noexcept;
  void spawn();
  static void run_chain(stage_rt* s);
  /// Work of one activation; returns a stage this worker should run next
  /// (see leave() for `later`).
  stage_rt* activation(stage_rt*& later);
  /// End of an activation: wake the producer, and claim the consumer so the
  /// caller runs it next (nullptr when it has nothing to do or is running).
  /// A producer in this stage's serial chain, while the chain runs together,
  /// is not woken but put in `later` (when `later` is given and empty):
  /// run_chain claims and runs it once the stages it runs next are done.
  stage_rt* leave(stage_rt** later = nullptr);
  /// Counts of a concurrent stage's activation, added to the stage's
  /// counters when it ends (one atomic add per activation, not per unit).
  struct tally {
    std::uint64_t units = 0, bytes = 0;
    /// A costly stage pushed a unit and has not woken its serial consumer
    /// yet: it does when it takes its next data unit (it is then busy, so
    /// the consumer should run elsewhere), else its leave() runs the
    /// consumer on this worker.
    bool deferred = false;
  };
  void flush(tally& t) noexcept;
  void process(work_unit* u, std::uint64_t ticket, tally& t);
  /// A unit an async stage (stage_spec::async) handed to its executable came
  /// back (from any thread): as the end of process() for it.
  void finish_async(work_unit* u, std::uint64_t bytes_in, std::exception_ptr e);
  /// Passes a processed unit on (or drops it when the run is dropping).
  void pass_on(work_unit* u, tally& t);
  /// An activation (or an async unit) left the stage; `wake`: notify the
  /// consumer if this forwards end of stream (not needed at the end of an
  /// activation, whose leave() claims the consumer).
  void finish_one(bool wake = false);
  void forward_eos(work_unit* e, bool wake);
};

}  // namespace sinew::detail
