#include <sinew/skeletons/farm.hpp>

namespace sinew {

namespace detail {

class farm_node final : public node_impl {
 public:
  farm_node(node_ptr w, unsigned n, farm_order o) : w_(std::move(w)), n_(n), order_(o) {}
  std::string label() const override { return order_ == farm_order::ordered ? "farm" : "farm(unordered)"; }
  type_list input_types() const override { return w_->input_types(); }
  type_list output_types() const override { return w_->output_types(); }
  bool in_place() const override { return w_->in_place(); }
  shape output_shape(const shape& in) const override { return w_->output_shape(in); }
  std::string child_path(const std::string& path) const { return path + "/" + w_->segment(); }
  void check(const std::string& path) const override { w_->check(child_path(path)); }
  std::string whole_unit_leaf(const std::string& path) const override { return w_->whole_unit_leaf(child_path(path)); }

  void compile_stream(stream_compiler& c, const std::string& path) const override {
    bool ordered = order_ == farm_order::ordered;
    unsigned depth = c.ordered_depth;
    if (ordered) {
      if (depth >= work_unit::max_ordered_depth)
        throw graph_error(path, "ordered farms nest at most " + std::to_string(work_unit::max_ordered_depth) +
                                    " deep");
      ++c.ordered_depth;
    }
    std::size_t first = c.stages.size();
    w_->compile_stream(c, child_path(path));
    if (ordered) --c.ordered_depth;
    if (c.stages.size() == first) return;
    for (std::size_t i = first; i < c.stages.size(); ++i) c.stages[i].concurrency *= n_;
    inherit_placement(c, first);
    if (capacity) c.stages[first].capacity = capacity;
    if (ordered) {
      c.stages[first].enter_regions.push_back(depth);
      auto& last = c.stages.back();
      if (last.exit_region < 0 || unsigned(last.exit_region) > depth) last.exit_region = int(depth);
    }
  }
  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    return w_->compile_inline(child_path(path));  // one unit at a time: the worker itself
  }

 private:
  friend bool farm_parts(const node_impl& n, node_ptr& worker, unsigned& workers, farm_order& order);
  node_ptr w_;
  unsigned n_;
  farm_order order_;
};

/// The worker, replica count and order of a farm node (false if `n` is not
/// one); used by `distributed` (nodes/distributed/distributed.cpp).
bool farm_parts(const node_impl& n, node_ptr& worker, unsigned& workers, farm_order& order) {
  auto* f = dynamic_cast<const farm_node*>(&n);
  if (!f) return false;
  worker = f->w_;
  workers = f->n_;
  order = f->order_;
  return true;
}

}  // namespace detail

node farm(node worker, unsigned n, farm_order order) {
  if (!worker) throw graph_error("farm", "empty worker node");
  if (n == 0) throw graph_error("farm", "needs at least 1 worker");
  return node(std::make_shared<detail::farm_node>(worker.impl(), n, order));
}

}  // namespace sinew
