// `distributed(farm_or_map)`: the node, its executables and the registry the
// serving ranks look subtrees up in. The transport (MPI, the sinew::mpi
// component: mpi_session.cpp) is only reached through detail::dist_transport.
#include <sinew/distributed/distributed.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include <sinew/skeletons/farm.hpp>

namespace sinew {
namespace detail {

bool farm_parts(const node_impl& n, node_ptr& worker, unsigned& workers, farm_order& order);

namespace {

std::atomic<dist_transport*> g_transport{nullptr};

struct registry {
  std::mutex m;
  std::map<std::string, dist_entry> entries;
  static registry& get() {
    static registry r;
    return r;
  }
};

dist_transport* live_transport() {
  dist_transport* t = active_transport();
  return t && t->ranks() > 1 ? t : nullptr;
}

/// A distributed farm's stage: units go to other ranks while they have room
/// (start), else run here on the worker (execute).
class dist_farm_exec final : public executable {
 public:
  dist_farm_exec(std::string path, std::shared_ptr<executable> w, bool in_place, unsigned in_flight)
      : path_(std::move(path)), w_(std::move(w)), in_place_(in_place), in_flight_(in_flight) {}
  void execute(exec_args& a) override { w_->execute(a); }
  bool start(exec_args& a, std::function<void(std::exception_ptr)> done) override {
    dist_transport* t = live_transport();
    return t && t->try_send_unit(path_, a, in_place_, in_flight_, std::move(done));
  }

 private:
  std::string path_;
  std::shared_ptr<executable> w_;
  bool in_place_;
  unsigned in_flight_;
};

/// A distributed map: every unit is cut into one row range per rank.
class dist_map_exec final : public executable {
 public:
  dist_map_exec(std::string path, std::shared_ptr<row_executable> m, bool in_place)
      : path_(std::move(path)), m_(std::move(m)), in_place_(in_place) {}
  void execute(exec_args& a) override {
    dist_transport* t = live_transport();
    if (!t) {
      m_->execute(a);
      return;
    }
    t->run_rows(path_, a, in_place_, [&](std::size_t rb, std::size_t re) { m_->execute_rows(a, rb, re); });
  }

 private:
  std::string path_;
  std::shared_ptr<row_executable> m_;
  bool in_place_;
};

class dist_node final : public node_impl {
 public:
  dist_node(node_ptr inner, distributed_options o) : inner_(std::move(inner)), o_(o) {
    is_farm_ = farm_parts(*inner_, worker_, workers_, order_);
    capacity = inner_->capacity;
  }
  std::string label() const override { return inner_->segment(); }
  type_list input_types() const override { return inner_->input_types(); }
  type_list output_types() const override { return inner_->output_types(); }
  bool in_place() const override { return inner_->in_place(); }
  shape output_shape(const shape& in) const override { return inner_->output_shape(in); }
  void check(const std::string& path) const override {
    inner_->check(path);
    if (!is_farm_ && !std::dynamic_pointer_cast<row_executable>(inner_->compile_inline(path)))
      throw graph_error(path, "distributed: only farms and maps whose leaf runs row ranges (map<F>, graph-file "
                              "kernels) can be distributed; this is a " + inner_->label());
  }

  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    if (is_farm_) {
      const std::string wp = path + "/" + worker_->segment();
      auto w = worker_->compile_inline(wp);
      register_dist(path, {w, false, worker_->in_place(), worker_->input_types(), worker_->output_types(), wp});
      return std::make_shared<dist_farm_exec>(path, w, worker_->in_place(), o_.in_flight);
    }
    auto m = std::dynamic_pointer_cast<row_executable>(inner_->compile_inline(path));
    if (!m) throw graph_error(path, "distributed: this map cannot run row ranges");
    register_dist(path, {m, true, inner_->in_place(), inner_->input_types(), inner_->output_types(), path});
    return std::make_shared<dist_map_exec>(path, m, inner_->in_place());
  }

  void compile_stream(stream_compiler& c, const std::string& path) const override {
    const std::size_t first = c.stages.size();
    if (!is_farm_) {
      node_impl::compile_stream(c, path);  // one serial stage: compile_inline's executable
      inner_->inherit_placement(c, first);
      return;
    }
    // The whole worker runs as one stage (it may run on another rank), whose
    // units finish asynchronously; its concurrency covers rank 0's workers
    // and every unit the other ranks may hold, so its queues have room for them.
    const bool ordered = order_ == farm_order::ordered;
    const unsigned depth = c.ordered_depth;
    if (ordered && depth >= work_unit::max_ordered_depth)
      throw graph_error(path, "ordered farms nest at most " + std::to_string(work_unit::max_ordered_depth) + " deep");
    dist_transport* t = live_transport();
    const unsigned remote = t ? o_.in_flight * unsigned(t->ranks() - 1) : 0;
    stage_spec s;
    s.path = path;
    s.exec = compile_inline(path);
    s.in_place = worker_->in_place();
    s.concurrency = std::max(2u, workers_ + remote);
    s.async = true;
    s.capacity = capacity;
    if (ordered) {
      s.enter_regions.push_back(depth);
      s.exit_region = int(depth);
    }
    c.stages.push_back(std::move(s));
    // NUMA placement of its outputs: the wrapper's own, else the farm's, else its worker's.
    inherit_placement(c, first);
    inner_->inherit_placement(c, first);
    worker_->inherit_placement(c, first);
  }

  const node_ptr& inner() const { return inner_; }

 private:
  node_ptr inner_;
  distributed_options o_;
  bool is_farm_ = false;
  node_ptr worker_;
  unsigned workers_ = 1;
  farm_order order_ = farm_order::ordered;
};

}  // namespace

dist_transport* active_transport() noexcept { return g_transport.load(std::memory_order_acquire); }
void set_active_transport(dist_transport* t) noexcept { g_transport.store(t, std::memory_order_release); }

void register_dist(const std::string& path, dist_entry e) {
  auto& r = registry::get();
  std::lock_guard<std::mutex> lk(r.m);
  r.entries[path] = std::move(e);
}

dist_entry find_dist(const std::string& path) {
  auto& r = registry::get();
  std::lock_guard<std::mutex> lk(r.m);
  auto it = r.entries.find(path);
  if (it == r.entries.end())
    throw error("no distributed node '" + path + "' was compiled on this rank (every rank must build the same graph)");
  return it->second;
}

}  // namespace detail

node distributed(node n, distributed_options o) {
  if (!n) throw graph_error("distributed", "empty node");
  if (o.in_flight == 0) throw graph_error(n.label(), "distributed: in_flight must be at least 1");
  detail::node_ptr inner = n.impl();
  detail::node_ptr w;
  unsigned k;
  farm_order ord;
  const bool farm = detail::farm_parts(*inner, w, k, ord);
  if (!farm && inner->label().rfind("map", 0) != 0)
    throw graph_error(n.label(), "distributed: only a farm or a map can be distributed");
  return node(std::make_shared<detail::dist_node>(std::move(inner), o));
}

bool is_distributed(const node& n) { return n && dynamic_cast<const detail::dist_node*>(n.impl().get()); }

}  // namespace sinew
