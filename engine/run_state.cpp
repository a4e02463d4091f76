// A run's life: building its channels and stages, starting it, failure,
// cancellation, stop and completion. The source's side is in run_source.cpp.
#include "run_state.hpp"

#include <bit>
#include <optional>

#include <sinew/detail/clock.hpp>

#include "channel.hpp"
#include "junction.hpp"
#include "ordered_region.hpp"
#include "stage.hpp"

namespace sinew::detail {

source_rt::~source_rt() = default;

namespace {
// Units alive never exceed the sum of capacities + 2 per source and sink,
// plus what junctions hold (docs/runtime.md).
std::size_t unit_bound(const compiled_graph& g) {
  std::size_t n = 8 + 2 * (g.sources.size() + g.sinks.size());
  for (std::size_t i = 0; i < g.channels.size(); ++i) n += channel_for(g, i).cap_max;
  for (const junction_spec& j : g.junctions) n += j.outs.size();
  return n;
}

std::uint64_t next_run_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);  // only uniqueness is needed
}
}  // namespace

std::shared_ptr<run_state> run_state::make(std::shared_ptr<const compiled_graph> g, std::vector<source> srcs,
                                           std::vector<sink> snks) {
  run_state* s = g->runs.take();
  const bool kept = s != nullptr;
  if (kept) s->g = std::move(g);
  else s = new run_state(std::move(g));
  s->reused = kept;
  std::shared_ptr<run_state> p(s, &run_state::retire, scalable_allocator<run_state>{});
  p->arm(std::move(srcs), std::move(snks));
  return p;
}

run_state::run_state(std::shared_ptr<const compiled_graph> graph)
    : g(std::move(graph)), tr(g->opts.trace), units(std::make_unique<unit_pool>(unit_bound(*g))) {
  sched = g->opts.scheduler ? g->opts.scheduler : &default_scheduler();
  if (unsigned every = g->opts.latency_every) {
    time_latency = true;
    latency_mask = std::bit_ceil(every) - 1;
  }
  for (std::size_t i = 0; i < g->channels.size(); ++i) {
    channel_spec c = channel_for(*g, i);
    channels.push_back(std::make_unique<channel>(c.k, c.cap, c.depth, c.cap_max));
    if (c.cap_max > c.cap) growable = true;
  }
  auto add_stage = [&](channel* in, channel* out, unsigned max_active) {
    auto st = std::make_unique<stage_rt>();
    st->run = this;
    st->in = in;
    st->out = out;
    st->max_active = max_active;
    st->sched = std::make_unique<stage_scheduler>(*sched, *st);
    stages.push_back(std::move(st));
    return stages.back().get();
  };
  const auto& specs = g->stages;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    stage_rt* st = add_stage(channels[g->stage_in[i]].get(), channels[g->stage_out[i]].get(), specs[i].concurrency);
    st->spec = &specs[i];
    st->copy_shared = g->copies_shared[i];
    if (specs[i].placement || g->opts.placement) caller_may_run = false;  // arm() places
  }
  for (const junction_spec& js : g->junctions) {
    stage_rt* st = add_stage(channels[js.ins[0]].get(), channels[js.outs[0]].get(), 1);
    junctions.push_back(std::make_unique<junction_rt>(*st, js));
  }
  first_sink = stages.size();
  for (std::size_t i = 0; i < g->sinks.size(); ++i) add_stage(channels[g->sinks[i].channel].get(), nullptr, 1);
  // Every channel's ends, once every stage exists.
  auto vertex = [&](vertex_ref v) -> stage_rt* {
    switch (v.k) {
      case vertex_ref::stage: return stages[v.i].get();
      case vertex_ref::junction: return &junctions[v.i]->st;
      case vertex_ref::sink: return stages[first_sink + v.i].get();
      case vertex_ref::source: break;
    }
    return nullptr;  // a source's stage is made at start(); a source thread has none
  };
  for (std::size_t i = 0; i < g->channels.size(); ++i)
    channels[i]->connect(vertex(g->channels[i].from), vertex(g->channels[i].to));
  for (auto& j : junctions) j->wire(channels);
  for (const region_spec& rs : g->regions) {
    auto r = std::make_unique<region_rt>();
    r->entry = stages[rs.entry].get();
    channel& exit = *channels[g->stage_out[rs.exit]];
    r->window.store(exit.capacity(), std::memory_order_relaxed);
    exit.reorder()->closes = r.get();  // a region ends at a reorder channel
    r->entry->admits.push_back(r.get());
    for (std::size_t i = rs.entry; i <= rs.exit; ++i) stages[i]->inside.push_back(r.get());
    regions.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < g->sources.size(); ++i) {
    auto s = std::make_unique<source_rt>();
    const endpoint_spec& e = g->sources[i];
    s->index = std::uint32_t(i);
    s->out = channels[e.channel].get();
    s->types = e.types;
    s->first_path = g->vertex_path(g->channels[e.channel].to);
    sources.push_back(std::move(s));
  }
}

void run_state::arm(std::vector<source> srcs, std::vector<sink> snks) {
  id = next_run_id();
  for (std::size_t i = 0; i < srcs.size(); ++i) sources[i]->src = std::move(srcs[i]);
  sinks = std::move(snks);
  for (std::size_t i = 0; i < sinks.size(); ++i) stages[first_sink + i]->snk = &sinks[i].impl();
  sinks_open.store(sinks.size(), std::memory_order_relaxed);
  if (g->root && !g->result.empty()) {  // who makes a tree's result layer
    if (sinks[0].impl().provides()) result_provider = &sinks[0].impl();
    else stages[0]->result = &g->result;
  }
  // Placers count the buffers they placed: new ones for every run.
  std::optional<topology> tp;  // read once, only when a stage places its buffers
  for (std::size_t i = 0; i < g->stages.size(); ++i)
    if (auto pl = g->stages[i].placement ? g->stages[i].placement : g->opts.placement) {
      if (!tp) tp = sched->numa_topology() ? *sched->numa_topology() : topology::current();
      stages[i]->place = std::make_unique<stage_placement>(*tp, *pl);
    }
}

run_state::~run_state() = default;

void run_state::retire(run_state* s) noexcept {
  const bool keep = s->park();
  const std::shared_ptr<const compiled_graph> g = std::move(s->g);  // the cache first, then (maybe) the graph
  if (keep) g->runs.give(s);
  else delete s;
}

bool run_state::park() noexcept {
  on_stop.reset();
  {
    std::lock_guard<std::mutex> lk(err_m);  // after any run_future::get() copied the error (graph.cpp)
    error = nullptr;
  }
  if (trace_live.exchange(false)) tr->run_ended();
  for (auto& s : sources) {
    if (!s->thread.joinable()) continue;
    if (s->thread.get_id() == std::this_thread::get_id()) s->thread.detach();
    else s->thread.join();
  }
  // The user's endpoints go now, as they would with the run.
  for (auto& s : sources) s->src = source(std::shared_ptr<source_impl>());
  sinks.clear();
  const int st = state.load(std::memory_order_relaxed);
  if (!started_ || st >= failed || units->alive() != 0) return false;
  // As built: every channel empty, every junction holding nothing (no unit
  // is alive), so only counts, costs and positions need resetting.
  for (auto& c : channels) c->restart();
  for (auto& x : stages) {
    x->restart();
    x->snk = nullptr;
    x->place.reset();
  }
  for (auto& j : junctions) j->restart();
  for (std::size_t i = 0; i < regions.size(); ++i) {
    regions[i]->occupied.store(0, std::memory_order_relaxed);
    regions[i]->window.store(channels[g->stage_out[g->regions[i].exit]]->capacity(), std::memory_order_relaxed);
  }
  for (auto& s : sources) {
    s->done.store(false, std::memory_order_relaxed);
    s->next_seq = 0;
    s->size.reset();
    for (auto* a : {&s->units, &s->bytes, &s->records}) a->store(0, std::memory_order_relaxed);
    if (s->stage) s->stage->restart();
  }
  for (auto& c : chains) c->restart();
  units->restart();
  if (time_latency) latency.clear();
  result_provider = nullptr;
  live_sources = false;
  grown.store(false, std::memory_order_relaxed);
  start_source = nullptr;
  state.store(running, std::memory_order_relaxed);
  stop_flag.store(false, std::memory_order_relaxed);
  done = false;
  done_latch.reset();
  started_ = false;
  return true;
}

void run_state::start() {
  for (auto& s : sources) s->size = s->src.impl().size_hint();
  // A tree's sink gets the source's length (into() sizes its vector once);
  // a dag's sinks are not told (their units may come from several sources).
  const bool tree = !g->is_dag();
  for (std::size_t i = 0; i < sinks.size(); ++i)
    sinks[i].impl().prepare(g->sinks[i].types, tree ? sources[0]->size : std::nullopt);
  if (g->opts.scheduler_stats) sched_start = sched->stats();
  if (tr) {
    tr->run_started();
    trace_live.store(true);
  }
  t0 = std::chrono::steady_clock::now();
  // Every stage waits for input from the start (stored before anything can
  // activate a stage).
  const std::uint64_t start_ns = now_ns();
  for (auto& st : stages) st->idle_since.store(start_ns | wait_input, std::memory_order_relaxed);
  // A source that never blocks runs as a stage; the chains depend on which
  // do, so a kept run's are found again only if that changed.
  bool same = chained_;
  std::vector<source_rt*> tasks;
  for (auto& sp : sources) {
    const bool blocks = sp->src.impl().blocking();
    live_sources = live_sources || blocks;  // before any stage runs
    same = same && blocks == !sp->stage;
    if (!blocks) tasks.push_back(sp.get());
  }
  if (!same) {
    for (auto& sp : sources) {
      source_rt& s = *sp;
      s.stage.reset();
      if (s.src.impl().blocking()) {
        s.out->connect(nullptr, s.out->consumer);
        continue;
      }
      s.stage = std::make_unique<stage_rt>();
      s.stage->run = this;
      s.stage->src = &s;
      s.stage->out = s.out;
      s.stage->max_active = 1;
      s.out->connect(s.stage.get(), s.out->consumer);
    }
    std::vector<stage_rt*> all;
    for (source_rt* s : tasks) all.push_back(s->stage.get());
    for (auto& st : stages) {
      st->chain = nullptr;
      all.push_back(st.get());
    }
    chains = serial_chain::find(all);  // before any stage can run
    chained_ = true;
  }
  for (auto& sp : sources)
    if (sp->src.impl().blocking()) sp->thread = std::thread([self = shared_from_this(), &s = *sp] { self->source_loop(s); });
  for (source_rt* s : tasks) {
    if (!s->stage->claim()) continue;
    if (!start_source) {
      start_source = s;
      start_keep = shared_from_this();  // released by whoever runs the start
      start_pending.store(true, std::memory_order_release);
      auto start_task = [w = weak_from_this()] {
        if (auto s = w.lock()) s->run_start();
      };
      // The caller of get() usually runs the start itself (run_future::wait):
      // the scheduler gets a check that submits it only when nobody has. A
      // caller that may not run stages sleeps: the start goes at once.
      if (!caller_may_run) {
        sched->submit(start_task);
      } else {
        sched->submit_backup([w = weak_from_this(), start_task] {
          const auto self = w.lock();
          if (self && self->start_pending.load(std::memory_order_acquire)) self->sched->submit(start_task);
        });
      }
    } else {
      s->stage->spawn();
    }
  }
  started_ = true;
}

void run_state::run_start() {
  if (start_pending.load(std::memory_order_acquire) && start_pending.exchange(false, std::memory_order_acq_rel)) {
    // The caller (in wait()) or the task (through its lock()) holds the run
    // meanwhile; the stages' tasks hold it from here on.
    const std::shared_ptr<run_state> keep = std::move(start_keep);
    stage_rt::run_chain(start_source->stage.get());
  }
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
  for (auto& k : sinks) k.impl().interrupt();  // a sink blocked on a peer must not hold up the failure
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
  if (how == cancelled)  // stop drains into the sinks: no interrupt
    for (auto& k : sinks) k.impl().interrupt();
}

void run_state::wake_all() {
  for (auto& s : sources) {
    s->src.impl().interrupt();
    if (s->stage) s->stage->notify();
    s->out->space_epoch.fetch_add(1, std::memory_order_seq_cst);
    s->out->space_epoch.notify_all();
  }
  for (auto& s : stages) s->notify();
}

void run_state::sink_finished() {
  if (sinks_open.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // A source's deferred error (source_impl::after_delivery), once every
  // sink has everything.
  for (auto& s : sources) {
    if (dropping()) break;
    try {
      s->src.impl().after_delivery();
    } catch (...) {
      fail(s->src.impl().label(), std::current_exception());
    }
  }
  complete();
}

void run_state::complete() {
  t1 = std::chrono::steady_clock::now();
  scheduler_stats end = g->opts.scheduler_stats ? sched->stats() : scheduler_stats{};
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
