// A run's life: building its channels and stages, starting it, failure,
// cancellation, stop and completion. The source's side is in run_source.cpp.
#include "run_state.hpp"

#include <bit>
#include <optional>

#include <sinew/detail/clock.hpp>

#include "channel.hpp"
#include "ordered_region.hpp"
#include "stage.hpp"

namespace sinew::detail {

namespace {
// Units alive never exceed the sum of capacities + 2 (see docs/runtime.md).
std::size_t unit_bound(const compiled_graph& g) {
  std::size_t n = 8;
  for (std::size_t i = 0; i <= g.stages.size(); ++i) n += channel_for(g, i).cap_max;
  return n;
}
}  // namespace

run_state::run_state(std::shared_ptr<const compiled_graph> graph, source s, sink k)
    : g(std::move(graph)), src(std::move(s)), snk(std::move(k)), tr(g->opts.trace), units(unit_bound(*g)) {
  sched = g->opts.scheduler ? g->opts.scheduler : &default_scheduler();
  if (unsigned every = g->opts.latency_every) {
    time_latency = true;
    latency_mask = std::bit_ceil(every) - 1;
  }
  const auto& specs = g->stages;
  std::size_t n = specs.size();
  std::optional<topology> tp;  // read once, only when a stage places its buffers
  auto topo = [&]() -> const topology& {
    if (!tp) tp = sched->numa_topology() ? *sched->numa_topology() : topology::current();
    return *tp;
  };
  for (std::size_t i = 0; i <= n; ++i) {
    channel_spec c = channel_for(*g, i);
    channels.push_back(std::make_unique<channel>(c.k, c.cap, c.depth, c.cap_max));
    if (c.cap_max > c.cap) growable = true;
  }
  for (std::size_t i = 0; i <= n; ++i) {
    auto st = std::make_unique<stage_rt>();
    st->run = this;
    st->spec = i < n ? &specs[i] : nullptr;
    st->in = channels[i].get();
    st->out = i < n ? channels[i + 1].get() : nullptr;
    st->max_active = i < n ? specs[i].concurrency : 1;
    st->sched = std::make_unique<stage_scheduler>(*sched, *st);
    if (i < n) {
      auto pl = specs[i].placement ? specs[i].placement : g->opts.placement;
      if (pl) {
        st->place = std::make_unique<stage_placement>(topo(), *pl);
        caller_may_run = false;
      }
    }
    channels[i]->connect(i ? stages[i - 1].get() : nullptr, st.get());
    stages.push_back(std::move(st));
  }
  for (const region_spec& rs : g->regions) {
    auto r = std::make_unique<region_rt>();
    r->entry = stages[rs.entry].get();
    r->window.store(channels[rs.exit + 1]->capacity(), std::memory_order_relaxed);
    channels[rs.exit + 1]->reorder()->closes = r.get();  // a region ends at a reorder channel
    r->entry->admits.push_back(r.get());
    for (std::size_t i = rs.entry; i <= rs.exit; ++i) stages[i]->inside.push_back(r.get());
    regions.push_back(std::move(r));
  }
  out_types = g->root.impl()->output_types();
  in_types = g->root.impl()->input_types();
}

run_state::~run_state() {
  {
    std::lock_guard<std::mutex> lk(err_m);  // after any run_future::get() copied the error (graph.cpp)
    error = nullptr;
  }
  if (trace_live.exchange(false)) tr->run_ended();
  if (source_thread.joinable()) {
    if (source_thread.get_id() == std::this_thread::get_id()) source_thread.detach();
    else source_thread.join();
  }
  units.clear_all();
}

void run_state::start() {
  src_size = src.impl().size_hint();
  snk.impl().prepare(out_types, src_size);
  sched_start = sched->stats();
  if (tr) {
    tr->run_started();
    trace_live.store(true);
  }
  t0 = std::chrono::steady_clock::now();
  // Every stage waits for input from the start (stored before anything can
  // activate a stage).
  const std::uint64_t start_ns = now_ns();
  for (auto& st : stages) st->idle_since.store(start_ns | wait_input, std::memory_order_relaxed);
  if (src.impl().blocking()) {
    source_thread = std::thread([self = shared_from_this()] { self->source_loop(); });
  } else {
    source_stage = std::make_unique<stage_rt>();
    source_stage->run = this;
    source_stage->spec = nullptr;
    source_stage->in = nullptr;
    source_stage->out = channels[0].get();
    source_stage->max_active = 1;
    channels[0]->connect(source_stage.get(), stages[0].get());
    if (source_stage->claim()) {
      start_pending.store(true, std::memory_order_release);
      sched->submit([self = shared_from_this()] { self->run_start(); });
    }
  }
}

void run_state::run_start() {
  if (start_pending.load(std::memory_order_acquire) && start_pending.exchange(false, std::memory_order_acq_rel))
    stage_rt::run_chain(source_stage.get());
}

void run_state::fail(const std::string& path, std::exception_ptr e) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(e);
  } catch (const node_error& ne) {
    what = ne.what();
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> lk(err_m);
    if (!error && state.load() < failed) error = std::make_exception_ptr(node_error(path, what, e));
  }
  int s = state.load();
  while (s < failed && !state.compare_exchange_weak(s, failed)) {}
  stop_flag.store(true, std::memory_order_release);
  wake_all();
  snk.impl().interrupt();  // a sink blocked on a peer must not hold up the failure
}

void run_state::request(int how) {
  if (how == cancelled) {
    {
      std::lock_guard<std::mutex> lk(err_m);
      if (!error && state.load() < failed) error = std::make_exception_ptr(sinew::cancelled());
    }
    int s = state.load();
    while (s < failed && !state.compare_exchange_weak(s, cancelled)) {}
  } else {
    int s = running;
    state.compare_exchange_strong(s, stopping);
  }
  stop_flag.store(true, std::memory_order_release);
  wake_all();
  if (how == cancelled) snk.impl().interrupt();  // stop drains into the sink: no interrupt
}

void run_state::wake_all() {
  src.impl().interrupt();
  if (source_stage) source_stage->notify();
  channel& c0 = *channels[0];
  c0.space_epoch.fetch_add(1, std::memory_order_seq_cst);
  c0.space_epoch.notify_all();
  for (auto& s : stages) s->notify();
}

void run_state::complete() {
  t1 = std::chrono::steady_clock::now();
  scheduler_stats end = sched->stats();
  if (trace_live.exchange(false)) tr->run_ended();
  {
    std::lock_guard<std::mutex> lk(done_m);
    sched_end = std::move(end);
    done = true;
  }
  done_cv.notify_all();
  done_latch.open();  // a caller helping in the scheduler (run_future::wait) returns
}

}  // namespace sinew::detail
