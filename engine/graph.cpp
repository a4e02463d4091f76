#include <sinew/engine/graph.hpp>

#include <algorithm>
#include <sstream>

#include <sinew/detail/clock.hpp>

#include "channel.hpp"
#include "compiled_graph.hpp"
#include "junction.hpp"
#include "run_state.hpp"
#include "stage.hpp"

namespace sinew {

using detail::run_state;

graph::graph(node root, graph_options o) {
  if (!root) throw graph_error("graph", "empty root node");
  auto g = std::make_shared<detail::compiled_graph>();
  g->root = root;
  g->opts = o;
  std::string path = root.impl()->segment();
  root.impl()->check(path);
  detail::stream_compiler c;
  root.impl()->compile_stream(c, path);
  g->stages = std::move(c.stages);
  // One source, the stages in order, one sink: channel i feeds stage i.
  g->sources.push_back({"source", 0, root.impl()->input_types()});
  g->sinks.push_back({"sink", 0, root.impl()->output_types()});
  const std::uint32_t in = g->add_channel({detail::vertex_ref::source, 0}, {detail::vertex_ref::sink, 0});
  g->sinks[0].channel = g->chain(0, g->stages.size(), in);
  g->copies_shared.assign(g->stages.size(), false);
  g->find_regions(0, g->stages.size());
  g->whole_unit_at = root.impl()->whole_unit_leaf(path);
  if (!root.impl()->in_place()) g->result.add(root.impl(), true, root.impl()->output_types());
  g_ = std::move(g);
}

graph::~graph() = default;
graph::graph(graph&&) noexcept = default;
graph& graph::operator=(graph&&) noexcept = default;

run_future graph::run(source src, sink snk) { return run(std::move(src), std::move(snk), std::stop_token{}); }

run_future graph::run(source src, sink snk, std::stop_token token) {
  if (g_->sources.size() != 1 || g_->sinks.size() != 1)
    throw graph_error("graph", "this graph has " + std::to_string(g_->sources.size()) + " source(s) and " +
                                   std::to_string(g_->sinks.size()) + " sink(s): run it with named endpoints");
  std::vector<source> srcs;
  srcs.push_back(std::move(src));
  std::vector<sink> snks;
  snks.push_back(std::move(snk));
  return start(std::move(srcs), std::move(snks), std::move(token));
}

namespace {
// The endpoints of `given` in the order of `declared`; every declared name
// given exactly once.
template <class E>
std::vector<E> by_name(const std::vector<detail::endpoint_spec>& declared, std::vector<std::pair<std::string, E>> given,
                       const char* what) {
  std::vector<std::optional<E>> slot(declared.size());
  for (auto& [name, e] : given) {
    std::size_t i = 0;
    while (i < declared.size() && declared[i].name != name) ++i;
    if (i == declared.size()) {
      std::string names;
      for (const auto& d : declared) names += (names.empty() ? "'" : ", '") + d.name + "'";
      throw graph_error(name, std::string("no ") + what + " of that name in the graph (it has " + names + ")");
    }
    if (slot[i]) throw graph_error(name, std::string(what) + " given twice");
    slot[i].emplace(std::move(e));
  }
  std::vector<E> out;
  for (std::size_t i = 0; i < declared.size(); ++i) {
    if (!slot[i]) throw graph_error(declared[i].name, std::string(what) + " not given to run()");
    out.push_back(std::move(*slot[i]));
  }
  return out;
}
}  // namespace

run_future graph::run(named_sources srcs, named_sinks snks, std::stop_token token) {
  return start(by_name(g_->sources, std::move(srcs), "source"), by_name(g_->sinks, std::move(snks), "sink"),
               std::move(token));
}

run_future graph::start(std::vector<source> srcs, std::vector<sink> snks, std::stop_token token) {
  std::string whole = g_->whole_unit_at;
  for (const sink& k : snks)
    if (whole.empty() && !k.impl().writes_records()) whole = k.impl().label();
  for (const source& s : srcs) s.impl().batch_for(whole);
  auto s = run_state::make(g_, std::move(srcs), std::move(snks));
  s->start();
  if (token.stop_possible())
    s->on_stop = std::make_unique<std::stop_callback<run_state::canceller>>(token, run_state::canceller{s});
  return run_future(std::move(s));
}

std::size_t graph::stage_count() const { return g_->stages.size(); }
const node& graph::root() const { return g_->root; }

std::string graph::describe() const {
  std::ostringstream os;
  for (std::size_t i = 0; i < g_->stages.size(); ++i) {
    const auto& s = g_->stages[i];
    os << i << ": " << s.path << " x" << s.concurrency << (s.in_place ? " in-place" : "");
    for (unsigned d : s.enter_regions) os << " enter-ordered(" << d << ")";
    if (s.exit_region >= 0) os << " exit-ordered(" << s.exit_region << ")";
    if (!s.entry_layers.empty()) os << " pushes-layers(" << s.entry_layers.size() << ")";
    os << "\n";
  }
  if (!g_->is_dag()) return os.str();
  for (const auto& j : g_->junctions) os << "junction: " << j.path << " " << detail::junction_kind_name(j.k) << "\n";
  for (const auto& c : g_->channels) os << "edge: " << g_->vertex_path(c.from) << " -> " << g_->vertex_path(c.to) << "\n";
  return os.str();
}

void run_future::wait() const {
  // The caller would sleep until the run ends: if the run has not started
  // yet (its first task still waits for a worker), it starts it here and
  // runs as far as the stages take it on this thread.
  if (s_->caller_may_run) s_->run_start();
  // Then it works in the scheduler until the run ends (tbb: takes the
  // arena's reserved slot and runs queued stage tasks) instead of sleeping.
  s_->sched->help_until(s_->done_latch);
  std::unique_lock<std::mutex> lk(s_->done_m);
  s_->done_cv.wait(lk, [&] { return s_->done; });
}

bool run_future::wait_for(std::chrono::milliseconds d) const {
  std::unique_lock<std::mutex> lk(s_->done_m);
  return s_->done_cv.wait_for(lk, d, [&] { return s_->done; });
}

bool run_future::ready() const {
  std::lock_guard<std::mutex> lk(s_->done_m);
  return s_->done;
}

void run_future::get() {
  wait();
  {
    // A mutex, not std::call_once: glibc's call_once makes a futex call
    // every first time, i.e. once per run.
    std::lock_guard<std::mutex> lk(s_->join_m);
    for (auto& src : s_->sources)
      if (src->thread.joinable() && src->thread.get_id() != std::this_thread::get_id()) src->thread.join();
  }
  std::exception_ptr e;
  {
    // The caller gets an exception object of its own, made under err_m:
    // the run's object dies with the run, on whichever worker drops the run
    // last, and the reference counts that order that (the exception's, and
    // the message's copy-on-write string in std::runtime_error) live in
    // libstdc++, which ThreadSanitizer does not see: it reported races on
    // the vptr and on the message. So no copy constructor: fresh objects.
    std::lock_guard<std::mutex> lk(s_->err_m);
    if (s_->error) {
      try {
        std::rethrow_exception(s_->error);
      } catch (const cancelled&) {
        e = std::make_exception_ptr(cancelled());
      } catch (const node_error& x) {
        std::string what(x.what());  // "<path>: <message>" (node_error's constructor)
        e = std::make_exception_ptr(node_error(x.path(), what.substr(x.path().size() + 2), x.cause()));
      } catch (...) {
        e = std::current_exception();
      }
    }
  }
  if (e) std::rethrow_exception(e);
}

void run_future::cancel() { s_->request(run_state::cancelled); }
void run_future::stop() { s_->request(run_state::stopping); }

namespace {
// End minus start of a scheduler's counters (saturating: a reset_stats in
// between must not wrap).
scheduler_stats delta(const scheduler_stats& a, const scheduler_stats& b) {
  auto d = [](std::uint64_t x, std::uint64_t y) { return y > x ? y - x : 0; };
  scheduler_stats r;
  r.tasks_submitted = d(a.tasks_submitted, b.tasks_submitted);
  r.tasks_run = d(a.tasks_run, b.tasks_run);
  r.parallel_fors = d(a.parallel_fors, b.parallel_fors);
  r.workers.resize(b.workers.size());
  for (std::size_t i = 0; i < b.workers.size(); ++i) {
    scheduler_stats::worker w0 = i < a.workers.size() ? a.workers[i] : scheduler_stats::worker{};
    const auto& w1 = b.workers[i];
    auto& w = r.workers[i];
    w.node = w1.node;
    w.tasks = d(w0.tasks, w1.tasks);
    w.busy_ns = d(w0.busy_ns, w1.busy_ns);
    w.steals = d(w0.steals, w1.steals);
    w.steal_attempts = d(w0.steal_attempts, w1.steal_attempts);
    w.steals_same_node = d(w0.steals_same_node, w1.steals_same_node);
    w.steals_remote = d(w0.steals_remote, w1.steals_remote);
    w.hinted_bytes = d(w0.hinted_bytes, w1.hinted_bytes);
    w.remote_bytes = d(w0.remote_bytes, w1.remote_bytes);
  }
  return r;
}
}  // namespace

run_stats run_future::stats() const {
  run_stats r;
  const detail::compiled_graph& g = *s_->g;
  for (auto& src : s_->sources) {
    endpoint_stats e{g.sources[src->index].name, src->units.load(), src->bytes.load(), src->records.load(),
                     src->src.impl().report()};
    r.units_in += e.units;
    r.records_in += e.records;
    r.bytes_in += e.bytes;
    r.sources.push_back(std::move(e));
  }
  r.reused = s_->reused;
  r.units_alive_max = s_->units->alive_max();
  r.units_alive = s_->units->alive();
  for (auto& c : s_->channels) r.capacity_total += c->capacity();
  {
    std::lock_guard<std::mutex> lk(s_->done_m);
    r.done = s_->done;
    auto end = s_->done ? s_->t1 : std::chrono::steady_clock::now();
    r.seconds = std::chrono::duration<double>(end - s_->t0).count();
    if (s_->done && g.opts.scheduler_stats) r.scheduler = delta(s_->sched_start, s_->sched_end);
  }
  if (!r.done && g.opts.scheduler_stats) r.scheduler = delta(s_->sched_start, s_->sched->stats());
  r.latency = s_->latency.read();
  const std::uint64_t now = detail::now_ns();
  for (std::size_t i = 0; i < s_->stages.size(); ++i) {
    const detail::stage_rt* st = s_->stages[i].get();
    stage_stats x;
    const bool sink = i >= s_->first_sink;
    if (st->spec) x.path = st->spec->path;
    else if (st->junction) x.path = st->junction->spec.path;
    else x.path = g.is_dag() ? g.sinks[i - s_->first_sink].name : st->snk->label();
    x.concurrency = st->max_active;
    x.capacity = st->in->capacity();
    x.high_water = st->in->high_water.load();
    x.queued = st->in->size_now();
    x.units = st->units.load();
    x.busy_ns = st->busy_ns.load();
    x.activations = st->activations.load();
    x.bytes = st->bytes.load();
    x.chunks = st->chunks.load();
    x.wait_in_ns = st->wait_in_ns.load();
    x.wait_out_ns = st->wait_out_ns.load();
    // A wait still going on counts up to now (the live status line).
    std::uint64_t since = st->idle_since.load();
    if (!r.done && since && now > since) ((since & 1) ? x.wait_out_ns : x.wait_in_ns) += now - (since & ~std::uint64_t(1));
    {
      std::lock_guard<std::mutex> lk(const_cast<detail::stage_rt*>(st)->counters_m);
      x.counters.assign(st->counters.begin(), st->counters.end());
    }
    if (sink) {
      const std::uint64_t recs = st->records.load();
      r.units_out += x.units;
      r.bytes_out += x.bytes;
      r.records_out += recs;
      r.sinks.push_back({g.sinks[i - s_->first_sink].name, x.units, x.bytes, recs, st->snk->report()});
    }
    r.stages.push_back(std::move(x));
  }
  return r;
}

}  // namespace sinew
