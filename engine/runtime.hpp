#pragma once
// Internal: run-time objects of one graph run (channels, stages, run state).
// Invariants are written down in docs/runtime.md.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include <sinew/detail/ring.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/engine/trace.hpp>

namespace sinew::detail {

struct stage_rt;

/// Unit latencies in fixed log buckets (8 per power of two), lock-free.
struct latency_histogram {
  static constexpr unsigned sub_bits = 3, buckets = (64 - sub_bits + 1) << sub_bits;
  std::atomic<std::uint64_t> count[buckets] = {};
  std::atomic<std::uint64_t> max{0};
  static unsigned bucket(std::uint64_t v) noexcept;
  static std::uint64_t upper(unsigned b) noexcept;  // largest value of bucket b
  void add(std::uint64_t v) noexcept;
  latency_stats read() const;
};

/// What a stage activation that ended was waiting for (low bit of the time
/// stamp in stage_rt::idle_since).
enum : std::uint64_t { wait_input = 0, wait_output = 1 };

/// The scheduler a stage's leaves see: forwards to the run's scheduler and
/// counts (and traces) the chunks maps split units into, so maps need no
/// hook of their own.
class stage_scheduler final : public scheduler {
 public:
  stage_scheduler(scheduler& real, stage_rt& st) : real_(real), st_(st) {}
  const char* name() const noexcept override { return real_.name(); }
  unsigned concurrency() const noexcept override { return real_.concurrency(); }
  void submit(std::function<void()> fn, const locality_hint& hint) override { real_.submit(std::move(fn), hint); }
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override;
  scheduler_stats stats() const override { return real_.stats(); }
  void reset_stats() override { real_.reset_stats(); }

 private:
  scheduler& real_;
  stage_rt& st_;
};

/// An ordered farm whose order is restored at `exit` (the outermost of those
/// ending there): units between its entry and the reorder channel after
/// `exit` are bounded by that channel's capacity (the window).
struct region_spec {
  std::size_t entry, exit;
};

struct compiled_graph {
  node root;
  graph_options opts;
  std::vector<stage_spec> stages;
  std::vector<region_spec> regions;
};

/// Run-time state of an ordered region: slots taken by units inside it.
struct region_rt {
  std::atomic<std::size_t> occupied{0};
  /// The reorder channel's capacity (raised with it, after it: see
  /// run_state::grow_capacities).
  std::atomic<std::size_t> window{0};
  stage_rt* entry = nullptr;
  bool try_enter() noexcept;
  void leave();
};

struct run_state;

/// A bounded edge. `used` counts reserved plus queued units and never
/// exceeds `cap`: producers reserve before they take their own input.
struct channel {
  enum class kind { spsc, mpmc, reorder };
  /// `cap_max` > `cap`: the capacity was not given, and may grow to
  /// `cap_max` once units are known to be small (run_state::grow_capacities).
  channel(kind k, std::size_t cap, int ticket_depth, std::size_t cap_max = 0);

  // Producer side. An SPSC channel has one producer, which holds at most one
  // reservation, so there reserving is a local check of the ring (no shared
  // counter bouncing between the two threads); the others count in `used`.
  bool try_reserve() noexcept;
  /// Gives a reservation back without waking anyone (the caller rechecks).
  void drop_reservation() noexcept;
  /// Gives a reservation back and wakes the producer side.
  void unreserve() noexcept;
  /// Fills a reserved slot. Returns whether an idle serial consumer may have
  /// been waiting for this unit: the channel was empty, or (reorder) the
  /// unit is the one whose turn it is.
  bool push(work_unit* u);
  // Consumer side. Takes a unit; `ticket` = its position in this channel's
  // output order.
  bool try_pop(work_unit*& u, std::uint64_t& ticket, bool any_order);
  // Anyone.
  bool has_data() const noexcept;
  /// Units queued (reorder: queued and reserved, an upper bound, so that
  /// no counter is shared by every push and pop).
  std::size_t size_now() const noexcept {
    if (sr) return sr->size_approx();
    if (mr) return mr->size_approx();
    return used.load(std::memory_order_relaxed);
  }
  bool has_space() const noexcept {
    if (sr) return sr->size_approx() < capacity();
    return used.load(std::memory_order_seq_cst) < capacity();
  }
  /// Current capacity. It grows at most once, before the first unit is
  /// pushed, so every reader that has seen a unit sees the final value.
  std::size_t capacity() const noexcept { return cap.load(std::memory_order_relaxed); }

  const kind k;
  std::atomic<std::size_t> cap;
  const std::size_t cap_max;  // what the rings were sized for
  const int depth;  // reorder: ticket slot used for ordering
  alignas(cache_line) std::atomic<std::size_t> used{0};
  alignas(cache_line) std::atomic<std::size_t> high_water{0};
  std::unique_ptr<spsc_ring<work_unit*>> sr;
  std::unique_ptr<mpmc_ring<work_unit*>> mr;
  // Reorder channel state: a ring indexed by ticket. Cell i holds ticket t
  // (t % size == i) when its seq is t + 1, and is free for ticket t when its
  // seq is t. The ordered region bounds the tickets present to
  // [next, next + window), window = cap <= size / 2, so a producer always
  // finds its cell free; a ticket that does not (only once the run drops
  // units, when `next` stops advancing) goes to `overflow` under `om`.
  struct reorder_cell {
    std::atomic<std::uint64_t> seq;
    std::atomic<work_unit*> u{nullptr};
  };
  std::unique_ptr<reorder_cell[]> rcells;
  std::uint64_t rmask = 0;
  alignas(cache_line) std::atomic<std::uint64_t> next{0};  // ticket whose turn it is
  mutable std::mutex om;
  std::map<std::uint64_t, work_unit*> overflow;
  std::atomic<std::size_t> overflow_n{0};
  bool overflow_has_next() const noexcept;
  bool pop_overflow(work_unit*& u, std::uint64_t& ticket, bool any_order);
  bool pop_any_cell(work_unit*& u, std::uint64_t& ticket);
  bool any_cell_full() const noexcept;

  stage_rt* consumer = nullptr;
  stage_rt* producer = nullptr;  // null: the source thread
  region_rt* closes = nullptr;   // reorder: the region a pop lets a unit leave
  // The source thread sleeps here when the channel is full.
  std::atomic<int> waiters{0};
  std::atomic<std::uint32_t> space_epoch{0};
  void freed();   // a slot became free: wake the producer
  /// A unit arrived: wake the consumer if it may be waiting for one (`head`:
  /// what push returned).
  void pushed(bool head);
};

/// Kind and capacity of channel `i` of `g` (0: source -> first stage, ...,
/// stage_count: last stage -> sink).
struct channel_spec {
  channel::kind k;
  std::size_t cap;
  int depth;  // reorder: ticket slot
  /// Most the capacity may grow to for small units (= cap when it was given
  /// by node::capacity or graph_options::capacity).
  std::size_t cap_max;
};
/// Capacity a channel of default capacity grows to when units are small.
inline constexpr std::size_t small_unit_capacity = 64;
/// Bytes of units one grown channel may hold (capacity = this / unit bytes,
/// at most small_unit_capacity).
inline constexpr std::size_t small_unit_budget = std::size_t(256) << 10;
channel_spec channel_for(const compiled_graph& g, std::size_t i);
const char* kind_name(channel::kind k) noexcept;

/// The placers of a stage with a placement (graph_options::placement,
/// node::placement): its output buffers are placed as the stage writes
/// them. One placer per concrete policy, since `automatic` resolves per unit.
struct stage_placement {
  stage_placement(const topology& t, sinew::placement p);
  sinew::placement policy;
  std::unique_ptr<placer> by_policy[3];  // standard, fine, coarse
  /// Places the pooled buffers of `out` (caller-owned ones are left
  /// alone); `split`: the stage has split its units into more than one
  /// chunk each on average so far.
  void place(layer& out, int toucher_node, bool split);
};

struct stage_rt {
  run_state* run;
  const stage_spec* spec;  // null: the sink
  channel* in;
  channel* out;  // null: the sink
  unsigned max_active;
  std::unique_ptr<stage_scheduler> sched;  // what leaves see as their scheduler
  std::unique_ptr<stage_placement> place;  // null: outputs not placed
  // Read by the neighbouring stages on every push and pop: its own line.
  alignas(cache_line) std::atomic<unsigned> active{0};
  // Written by this stage's activations only.
  alignas(cache_line) std::atomic<std::size_t> inflight{0};
  std::atomic<work_unit*> eos{nullptr};
  std::atomic<std::uint64_t> units{0}, busy_ns{0}, activations{0}, bytes{0};
  // Waits (see docs/observability.md): the time an activation that found no
  // input / no room ended, with the reason in the low bit; 0 = not waiting.
  std::atomic<std::uint64_t> idle_since{0}, wait_in_ns{0}, wait_out_ns{0};
  std::atomic<bool> eos_seen{false};  // no waits are counted after end of stream
  alignas(cache_line) std::atomic<std::uint64_t> chunks{0};
  std::mutex counters_m;
  std::map<std::string, double, std::less<>> counters;  // add_stage_counter
  /// Moving average of the time one unit takes here (UINT32_MAX: unknown).
  std::atomic<std::uint32_t> unit_cost_ns{UINT32_MAX};
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

  bool has_work() const noexcept;
  bool enter_regions();
  void leave_regions(std::size_t n);
  /// Takes an activation slot if there is work and a free one (full fence).
  bool claim();
  /// claim(), then run the activation as a scheduler task.
  void notify();
  /// notify() unless the stage is visibly running (no fence).
  void hint();
  /// With `a` activations running, none more is needed now (see runtime.cpp).
  bool enough_running(unsigned a) const noexcept;
  void spawn();
  static void run_chain(stage_rt* s);
  /// Work of one activation; returns a stage this worker should run next.
  stage_rt* activation();
  /// End of an activation: wake the producer, and claim the consumer so the
  /// caller runs it next (nullptr when it has nothing to do or is running).
  stage_rt* leave();
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

struct run_state : std::enable_shared_from_this<run_state> {
  enum : int { running = 0, stopping = 1, failed = 2, cancelled = 3 };

  run_state(std::shared_ptr<const compiled_graph> g, source src, sink snk);
  ~run_state();
  void start();
  /// Source on its own thread (sources that may block).
  void source_loop();
  /// Source as a stage on the scheduler (sources that never block).
  stage_rt* source_activation();
  work_unit* make_unit(std::uint64_t seq);  // null: end of stream or failure
  /// Raises the capacity of the channels of default capacity (and the
  /// windows of their regions) for units of `bytes` (the first unit's).
  void grow_capacities(std::size_t bytes);
  bool growable = false;  // some channel has cap_max > cap
  /// `wake`: notify the first stage (the source stage's leave() claims it).
  void push_eos(std::uint64_t seq, bool wake);
  /// The first activation of a task-mode source: submitted as a task by
  /// start(), and run by whichever comes first, that task or a caller of
  /// run_future::get()/wait() (which then runs the graph's stages itself
  /// instead of sleeping while workers wake up: a short run ends on the
  /// caller's thread).
  std::atomic<bool> start_pending{false};
  void run_start();
  /// A caller of get()/wait() may run the stages: not when a stage places
  /// its buffers (`standard` placement records the node of the worker that
  /// writes them; a thread outside the scheduler has none).
  bool caller_may_run = true;
  bool reserve_blocking(channel& c, bool give_up_when_stopping);
  /// The source should go on: running, or stopping with a source whose
  /// buffered items count as accepted (drains_on_stop).
  bool producing() const;

  work_unit* acquire_unit();
  void release_unit(work_unit* u);
  void fail(const std::string& path, std::exception_ptr e);
  void request(int how);  // stop or cancel
  void complete();        // end of stream reached the sink
  void wake_all();
  bool dropping() const noexcept { return state.load(std::memory_order_acquire) >= failed; }

  std::shared_ptr<const compiled_graph> g;
  source src;
  sink snk;
  // Read on every unit by every stage: kept away from written lines.
  trace* const tr;  // null: not traced
  std::uint64_t latency_mask = 0;  // seq & mask == 0: the unit is timed
  bool time_latency = false;
  scheduler* sched;
  std::vector<std::unique_ptr<channel>> channels;
  std::vector<std::unique_ptr<stage_rt>> stages;  // back(): the sink
  std::vector<std::unique_ptr<region_rt>> regions;
  std::unique_ptr<stage_rt> source_stage;  // null when the source has a thread
  std::atomic<bool> source_done{false};
  std::uint64_t next_seq = 0;  // source stage only
  std::optional<std::uint64_t> src_size;  // the source's size_hint()
  type_list out_types, in_types;

  std::atomic<int> state{running};
  std::atomic<bool> stop_flag{false};  // seen by sources through unit_builder
  std::mutex err_m;
  std::exception_ptr error;

  // unit recycling
  mpmc_ring<work_unit*> free_units;  // recycled units, lock-free
  std::mutex pool_m;                 // guards the two below (slow path)
  std::vector<work_unit*> spare_units;
  std::vector<std::unique_ptr<work_unit>> all_units;
  alignas(cache_line) std::atomic<std::size_t> alive{0};
  std::atomic<std::size_t> alive_max{0};
  alignas(cache_line) std::atomic<std::uint64_t> units_in{0};    // the source's
  std::atomic<std::uint64_t> bytes_in{0};
  alignas(cache_line) std::atomic<std::uint64_t> units_out{0};   // the sink's
  latency_histogram latency;
  scheduler_stats sched_start, sched_end;  // sched_end: under done_m once done
  std::atomic<bool> trace_live{false};
  alignas(cache_line) char pad_[1] = {};
  std::chrono::steady_clock::time_point t0, t1;
  std::thread source_thread;
  std::mutex done_m;
  std::condition_variable done_cv;
  bool done = false;
  help_latch done_latch;  // opened after done: the caller of wait() helps in the scheduler until then
  std::once_flag join_once;

  struct canceller {
    std::weak_ptr<run_state> w;
    void operator()() const {
      if (auto s = w.lock()) s->request(cancelled);
    }
  };
  std::unique_ptr<std::stop_callback<canceller>> on_stop;
};

}  // namespace sinew::detail
