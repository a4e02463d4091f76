// task_graph: tasks with dependencies, run by counting each task's
// finished predecessors (docs/scheduling_library.md, "Task graphs").
#include <sinew/schedulers/task_graph.hpp>

#include <algorithm>
#include <ostream>
#include <span>
#include <sstream>

#include <sinew/engine/error.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

namespace detail {

struct task_node {
  enum class kind : std::uint8_t { work, condition, module };
  kind k = kind::work;
  std::function<void()> work;
  std::function<int()> cond;
  task_graph* module = nullptr;
  // Successors by index in the graph's nodes: releasing one touches its
  // join count only, not the node (a cache miss fewer per edge).
  std::vector<std::uint32_t> succ;
  std::uint32_t strong_preds = 0;  // predecessors that are not conditions
  std::uint32_t weak_preds = 0;
  std::uint32_t index = 0;
  std::string name;
  int numa_node = -1;
  std::vector<std::uint64_t> bytes_on_node;

  bool hinted() const noexcept { return numa_node >= 0 || !bytes_on_node.empty(); }
  locality_hint hint() const noexcept {
    return {.numa_node = numa_node, .reads = {}, .bytes_on_node = std::span<const std::uint64_t>(bytes_on_node)};
  }
};

// One run of a graph (N iterations of it). `pending` counts the tasks
// submitted and not finished, plus one held by whoever is starting an
// iteration; the thread that brings it to 0 starts the next iteration or
// ends the run. A task's successors become ready when their count of
// unfinished strong predecessors (`join`) reaches 0; the finishing worker
// runs one ready successor itself and submits the others.
struct task_run {
  task_run(task_graph& graph, scheduler& sched, std::size_t n, std::function<bool()> stop_pred, task_run* up)
      : g(graph), s(sched), left(n), stop(std::move(stop_pred)), parent(up),
        join(new std::atomic<std::uint32_t>[graph.nodes_.size()]) {}

  task_graph& g;
  scheduler& s;
  std::size_t left;               // iterations still to start (without `stop`)
  std::function<bool()> stop;     // run_until's predicate
  task_run* parent;               // the run of the graph this one is composed into
  std::unique_ptr<std::atomic<std::uint32_t>[]> join;
  alignas(64) std::atomic<std::uint32_t> pending{0};
  std::atomic<bool> stopping{false};  // a task failed or cancel() was called
  std::atomic<bool> cancel_requested{false};
  std::atomic<std::size_t> iterations{0};
  std::atomic<bool> skipped{false};  // a task was not run because the run was stopping
  bool cut_short = false;  // tasks or iterations were skipped (read after `done`)
  std::mutex m;
  std::exception_ptr error;
  help_latch done;

  bool stop_requested() const noexcept {
    for (const task_run* r = this; r; r = r->parent)
      if (r->stopping.load(std::memory_order_relaxed)) return true;
    return false;
  }
  void fail(std::exception_ptr e) noexcept {
    {
      std::lock_guard<std::mutex> lk(m);
      if (!error) error = std::move(e);
    }
    stopping.store(true, std::memory_order_relaxed);
  }

  // Queues `n` as a task of its own. The caller holds a count in `pending`,
  // so it cannot reach 0 here.
  void submit(task_node* n) noexcept {
    pending.fetch_add(1, std::memory_order_relaxed);
    queue(n);
  }
  // `submit` for a task whose count the caller has added to `pending`.
  void queue(task_node* n) noexcept {
    try {
      s.submit([this, n] { execute(n); }, n->hint());
    } catch (...) {
      fail(std::current_exception());
      pending.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // Queues the sources of an iteration (the caller holds a count). A thread
  // outside the scheduler submits through its slow path (an injection-queue
  // lock, a oneTBB enqueue), so it queues one task that queues them all
  // from a worker, where each is a push onto the worker's own deque.
  void queue_sources() noexcept {
    const std::vector<task_node*>& src = g.sources_;
    pending.fetch_add(std::uint32_t(src.size()), std::memory_order_relaxed);
    if (src.size() > 1 && s.current_node() < 0) {
      pending.fetch_add(1, std::memory_order_relaxed);
      try {
        s.submit([this] {
          for (task_node* n : g.sources_) queue(n);
          if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) drive(false);
        });
        return;
      } catch (...) {
        pending.fetch_sub(1, std::memory_order_relaxed);  // queue them from here
      }
    }
    for (task_node* n : src) queue(n);
  }
  // `n` is ready: the caller runs it next (`next`) unless it already has a
  // task to run next or `n` asks for another NUMA node.
  void ready(task_node* n, task_node*& next) noexcept {
    if (!next && (!n->hinted() || (n->bytes_on_node.empty() && n->numa_node == s.current_node()))) next = n;
    else submit(n);
  }
  void release_successors(task_node* n, task_node*& next) noexcept {
    for (std::uint32_t x : n->succ)
      if (join[x].fetch_sub(1, std::memory_order_acq_rel) == 1) ready(g.nodes_[x].get(), next);
  }

  // The body of every submitted task: runs `n`, then the ready successor it
  // kept, and so on; the last task of an iteration starts the next one.
  void execute(task_node* n) noexcept {
    while (n) {
      task_node* next = nullptr;
      if (stop_requested()) {
        skipped.store(true, std::memory_order_relaxed);
      } else {
        // Ready again for the next pass of a loop through it (each iteration
        // starts with every count reset: without condition tasks, a task
        // runs once per iteration).
        if (g.loops_) join[n->index].store(n->strong_preds, std::memory_order_relaxed);
        try {
          switch (n->k) {
            case task_node::kind::work:
              n->work();
              release_successors(n, next);
              break;
            case task_node::kind::condition: {
              const int k = n->cond();
              if (k >= 0 && std::size_t(k) < n->succ.size()) ready(g.nodes_[n->succ[std::size_t(k)]].get(), next);
              break;
            }
            case task_node::kind::module:
              run_module(*n->module);
              release_successors(n, next);
              break;
          }
        } catch (...) {
          fail(std::current_exception());
        }
      }
      n = next;
    }
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) drive(false);
  }

  void run_module(task_graph& sub) {
    auto r = std::make_shared<task_run>(sub, s, 1, nullptr, this);
    task_graph::start(r);
    task_graph_run(std::move(r)).wait();
  }

  // Whether to start another iteration (called with no task in flight).
  bool again() noexcept {
    if (stop_requested()) {
      cut_short = skipped.load(std::memory_order_relaxed) || stop || left > 0;
      return false;
    }
    if (stop) {
      try {
        return !stop();
      } catch (...) {
        fail(std::current_exception());
        return false;
      }
    }
    if (left == 0) return false;
    --left;
    return true;
  }

  // Starts iterations until one is still running when its sources are
  // queued (its last task calls drive again) or the run is over. A loop, so
  // that iterations that end at once do not recurse.
  void drive(bool first) noexcept {
    for (;; first = false) {
      if (!first) iterations.fetch_add(1, std::memory_order_relaxed);
      if (!again()) return finish();
      const auto& nodes = g.nodes_;
      for (std::size_t i = 0; i < nodes.size(); ++i)
        join[i].store(nodes[i]->strong_preds, std::memory_order_relaxed);
      pending.store(1, std::memory_order_relaxed);  // held while the sources are queued
      queue_sources();
      if (pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    }
  }

  void finish() noexcept {
    // The graph may be destroyed once its count is 0 and the waiter may
    // free this run once `done` opens: nothing of either is touched after.
    if (g.active_.fetch_sub(1, std::memory_order_acq_rel) == 1) g.active_.notify_all();
    done.open();
  }
};

}  // namespace detail

using detail::task_node;
using detail::task_run;

// ---- task_handle

void task_handle::link(const task_handle& from, const task_handle& to) {
  if (!from.n_ || !to.n_) throw error("task_graph: an edge to or from an empty task handle");
  if (from.g_ != to.g_)
    throw error("task_graph '" + from.g_->name() + "': task '" + from.n_->name + "' and task '" + to.n_->name +
                "' belong to different graphs");
  from.g_->check_idle("precede");
  from.n_->succ.push_back(to.n_->index);
  if (from.n_->k == task_node::kind::condition) ++to.n_->weak_preds;
  else ++to.n_->strong_preds;
  std::lock_guard<std::mutex> lk(from.g_->check_m_);
  from.g_->checked_ = false;
}

task_handle& task_handle::name(std::string n) {
  n_->name = std::move(n);
  return *this;
}
const std::string& task_handle::name() const { return n_->name; }
task_handle& task_handle::on_node(int node) {
  g_->check_idle("on_node");
  n_->numa_node = node < 0 ? -1 : node;
  return *this;
}
task_handle& task_handle::reads(std::vector<std::uint64_t> bytes_on_node) {
  g_->check_idle("reads");
  n_->bytes_on_node = std::move(bytes_on_node);
  return *this;
}
std::size_t task_handle::successors() const { return n_->succ.size(); }
std::size_t task_handle::predecessors() const { return n_->strong_preds + n_->weak_preds; }
bool task_handle::is_condition() const { return n_->k == task_node::kind::condition; }

// ---- task_graph_run

task_graph_run& task_graph_run::operator=(task_graph_run&& o) noexcept {
  if (this != &o) {
    if (r_) r_->s.help_until(r_->done);
    r_ = std::move(o.r_);
  }
  return *this;
}

task_graph_run::~task_graph_run() {
  if (r_) r_->s.help_until(r_->done);
}

void task_graph_run::wait() {
  if (!r_) throw error("task_graph_run::wait: no run");
  r_->s.help_until(r_->done);
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(r_->m);
    e = r_->error;
  }
  if (e) std::rethrow_exception(e);
  if (r_->cut_short && r_->cancel_requested.load(std::memory_order_relaxed)) throw cancelled();
}

bool task_graph_run::ready() const { return !r_ || r_->done.is_open(); }

void task_graph_run::cancel() {
  if (!r_) return;
  r_->cancel_requested.store(true, std::memory_order_relaxed);
  r_->stopping.store(true, std::memory_order_relaxed);
}

std::size_t task_graph_run::iterations() const {
  return r_ ? r_->iterations.load(std::memory_order_relaxed) : 0;
}

// ---- task_graph

task_graph::task_graph(std::string name) : name_(std::move(name)) {}

task_graph::~task_graph() {
  for (std::uint32_t a = active_.load(std::memory_order_acquire); a != 0; a = active_.load(std::memory_order_acquire))
    active_.wait(a, std::memory_order_acquire);
}

std::size_t task_graph::size() const noexcept { return nodes_.size(); }

void task_graph::check_idle(const char* what) const {
  if (const auto a = active_.load(std::memory_order_acquire))
    throw error("task_graph '" + name_ + "': " + what + " while " + std::to_string(a) + " run(s) are in flight");
}

task_node& task_graph::add_node() {
  check_idle("emplace");
  auto n = std::make_unique<task_node>();
  n->index = std::uint32_t(nodes_.size());
  n->name = "task " + std::to_string(nodes_.size());
  nodes_.push_back(std::move(n));
  std::lock_guard<std::mutex> lk(check_m_);
  checked_ = false;
  return *nodes_.back();
}

task_handle task_graph::add_work(std::function<void()> f) {
  if (!f) throw error("task_graph '" + name_ + "': emplace of an empty function");
  task_node& n = add_node();
  n.work = std::move(f);
  return {this, &n};
}

task_handle task_graph::add_condition(std::function<int()> f) {
  if (!f) throw error("task_graph '" + name_ + "': emplace of an empty function");
  task_node& n = add_node();
  n.k = task_node::kind::condition;
  n.cond = std::move(f);
  return {this, &n};
}

task_handle task_graph::compose(task_graph& sub) {
  if (&sub == this) throw error("task_graph '" + name_ + "': composed into itself");
  task_node& n = add_node();
  n.k = task_node::kind::module;
  n.module = &sub;
  n.name = sub.name();
  return {this, &n};
}

void task_graph::clear() {
  check_idle("clear");
  nodes_.clear();
  std::lock_guard<std::mutex> lk(check_m_);
  sources_.clear();
  checked_ = false;
}

namespace {

// A cycle of strong edges among `left` (nodes Kahn's algorithm could not
// order), as "a -> b -> a".
std::string strong_cycle(const std::vector<std::unique_ptr<task_node>>& nodes, const std::vector<char>& left) {
  // Every node left has a strong predecessor left, so walking strong
  // predecessors from any of them must revisit one: that stretch is a cycle.
  std::vector<std::vector<task_node*>> preds(nodes.size());
  for (const auto& n : nodes)
    if (n->k != task_node::kind::condition)
      for (std::uint32_t x : n->succ) preds[x].push_back(n.get());
  std::vector<int> seen(nodes.size(), -1);
  std::vector<task_node*> path;
  task_node* cur = nullptr;
  for (std::size_t i = 0; i < nodes.size() && !cur; ++i)
    if (left[i]) cur = nodes[i].get();
  while (seen[cur->index] < 0) {
    seen[cur->index] = int(path.size());
    path.push_back(cur);
    for (task_node* p : preds[cur->index])
      if (left[p->index]) {
        cur = p;
        break;
      }
  }
  std::string s;
  for (std::size_t i = path.size(); i-- > std::size_t(seen[cur->index]);) s += "'" + path[i]->name + "' -> ";
  return s + "'" + path.back()->name + "'";  // cur precedes the last node walked
}

}  // namespace

// Composition cycles are rare and graphs small: a
// plain depth-first walk (a graph composed twice is walked twice).
std::string task_graph::composition_cycle(const task_graph* root, const task_graph* g, unsigned depth) {
  if (depth > 64) return "... (composed more than 64 deep)";
  for (const auto& n : g->nodes_)
    if (n->k == task_node::kind::module) {
      if (n->module == root) return "'" + root->name() + "'";
      if (std::string c = composition_cycle(root, n->module, depth + 1); !c.empty())
        return "'" + n->module->name() + "' -> " + c;
    }
  return {};
}

void task_graph::validate() const {
  std::lock_guard<std::mutex> lk(check_m_);
  if (checked_) return;
  std::vector<task_node*> sources;
  std::vector<std::uint32_t> indeg(nodes_.size());
  std::vector<task_node*> order;
  for (const auto& n : nodes_) {
    indeg[n->index] = n->strong_preds;
    if (n->strong_preds == 0) order.push_back(n.get());
    if (n->strong_preds + n->weak_preds == 0) sources.push_back(n.get());
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i]->k != task_node::kind::condition)
      for (std::uint32_t x : order[i]->succ)
        if (--indeg[x] == 0) order.push_back(nodes_[x].get());
  if (order.size() != nodes_.size()) {
    std::vector<char> left(nodes_.size(), 1);
    for (task_node* n : order) left[n->index] = 0;
    throw graph_error("task_graph '" + name_ + "'",
                      "a cycle of plain edges can never run: " + strong_cycle(nodes_, left) +
                          " (loop back through a condition task)");
  }
  if (!nodes_.empty() && sources.empty())
    throw graph_error("task_graph '" + name_ + "'", "no task without predecessors: nothing can start");
  if (std::string chain = composition_cycle(this, this, 0); !chain.empty())
    throw graph_error("task_graph '" + name_ + "'", "composed into itself: '" + name_ + "' -> " + chain);
  sources_ = std::move(sources);
  loops_ = std::any_of(nodes_.begin(), nodes_.end(),
                       [](const auto& n) { return n->k == task_node::kind::condition; });
  checked_ = true;
}

task_graph_run task_graph::run(scheduler& s) { return start(s, 1, nullptr); }
task_graph_run task_graph::run_n(scheduler& s, std::size_t n) { return start(s, n, nullptr); }
task_graph_run task_graph::run_until(scheduler& s, std::function<bool()> stop) {
  if (!stop) throw error("task_graph '" + name_ + "': run_until without a predicate");
  return start(s, 0, std::move(stop));
}

task_graph_run task_graph::start(scheduler& s, std::size_t n, std::function<bool()> stop) {
  auto r = std::make_shared<task_run>(*this, s, n, std::move(stop), nullptr);
  start(r);
  return task_graph_run(std::move(r));
}

void task_graph::start(const std::shared_ptr<detail::task_run>& r) {
  task_graph& g = r->g;
  g.validate();
  if (const topology* t = r->s.numa_topology())
    for (const auto& n : g.nodes_)
      if (!n->bytes_on_node.empty() && n->bytes_on_node.size() != t->nodes())
        throw graph_error("task_graph '" + g.name_ + "'/'" + n->name + "'",
                          "reads() has " + std::to_string(n->bytes_on_node.size()) + " entries, the scheduler's topology " +
                              std::to_string(t->nodes()) + " nodes");
  g.active_.fetch_add(1, std::memory_order_acq_rel);
  if (g.nodes_.empty()) return r->finish();
  r->drive(true);
}

// ---- DOT

namespace {

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c == '\n' ? ' ' : c;
  }
  return q + "\"";
}

struct dot_writer {
  std::ostream& os;
  // Graphs in the order they get ids ("g<id>_t<task>"): those drawn, then
  // those composed somewhere and still to draw as clusters.
  std::vector<const task_graph*> drawn;
  std::vector<const task_graph*> queued;

  std::size_t id_of(const task_graph* g) {
    for (std::size_t i = 0; i < drawn.size(); ++i)
      if (drawn[i] == g) return i;
    for (std::size_t i = 0; i < queued.size(); ++i)
      if (queued[i] == g) return drawn.size() + i;
    queued.push_back(g);
    return drawn.size() + queued.size() - 1;
  }
};

}  // namespace

void task_graph::dot(std::ostream& os) const {
  dot_writer w{os, {}, {this}};
  os << "digraph " << quoted(name_) << " {\n  node [shape=box];\n";
  while (!w.queued.empty()) {
    const task_graph* g = w.queued.front();
    w.queued.erase(w.queued.begin());
    w.drawn.push_back(g);
    const std::size_t gid = w.drawn.size() - 1;
    const std::string pre = "g" + std::to_string(gid) + "_t";
    const char* indent = gid == 0 ? "  " : "    ";
    if (gid != 0) os << "  subgraph cluster_" << gid << " {\n    label=" << quoted(g->name_) << ";\n";
    for (const auto& n : g->nodes_) {
      os << indent << pre << n->index << " [label=" << quoted(n->name);
      if (n->k == task_node::kind::condition) os << ", shape=diamond";
      if (n->k == task_node::kind::module) os << ", shape=box3d";
      os << "];\n";
    }
    for (const auto& n : g->nodes_) {
      for (std::size_t k = 0; k < n->succ.size(); ++k) {
        os << indent << pre << n->index << " -> " << pre << n->succ[k];
        if (n->k == task_node::kind::condition) os << " [style=dashed, label=\"" << k << "\"]";
        os << ";\n";
      }
      if (n->k == task_node::kind::module && !n->module->nodes_.empty())
        os << indent << pre << n->index << " -> g" << w.id_of(n->module) << "_t0 [style=dotted, arrowhead=none];\n";
    }
    if (gid != 0) os << "  }\n";
  }
  os << "}\n";
}

std::string task_graph::dot() const {
  std::ostringstream os;
  dot(os);
  return os.str();
}

}  // namespace sinew
