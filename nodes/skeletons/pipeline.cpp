#include <sinew/engine/layer_plan.hpp>
#include <sinew/skeletons/pipeline.hpp>

namespace sinew::detail {

class pipeline_node final : public node_impl {
 public:
  explicit pipeline_node(std::vector<node_ptr> c) : c_(std::move(c)) {
    last_producing_ = -1;
    for (std::size_t i = 0; i < c_.size(); ++i)
      if (!c_[i]->in_place()) last_producing_ = int(i);
  }
  std::string label() const override { return "pipeline"; }
  type_list input_types() const override { return c_.front()->input_types(); }
  type_list output_types() const override {
    return last_producing_ < 0 ? input_types() : c_[std::size_t(last_producing_)]->output_types();
  }
  bool in_place() const override { return last_producing_ < 0; }
  shape output_shape(const shape& in) const override {
    shape s = in;
    for (auto& c : c_) s = c->output_shape(s);
    return s;
  }
  std::string child_path(const std::string& path, std::size_t i) const {
    return path + "[" + std::to_string(i) + "]/" + c_[i]->segment();
  }
  std::string whole_unit_leaf(const std::string& path) const override {
    for (std::size_t i = 0; i < c_.size(); ++i)
      if (std::string w = c_[i]->whole_unit_leaf(child_path(path, i)); !w.empty()) return w;
    return {};
  }
  void check(const std::string& path) const override {
    for (std::size_t i = 0; i < c_.size(); ++i) {
      c_[i]->check(child_path(path, i));
      if (i == 0) continue;
      type_list prev = c_[i - 1]->output_types(), cur = c_[i]->input_types();
      if (!prev.matches(cur))
        throw graph_error(child_path(path, i), "reads " + cur.str() + " but stage " + std::to_string(i - 1) +
                                                   " writes " + prev.str());
    }
  }

  /// The intermediate layers: the results of the producing children but the
  /// last one, sized by the shape rules of the children up to them.
  layer_plan intermediates() const {
    layer_plan p;
    for (int i = 0; i < last_producing_; ++i) {
      const node_ptr& ch = c_[std::size_t(i)];
      p.add(ch, !ch->in_place(), ch->in_place() ? type_list{} : ch->output_types());
    }
    return p;
  }

  void compile_stream(stream_compiler& c, const std::string& path) const override {
    std::size_t first = c.stages.size();
    for (std::size_t i = 0; i < c_.size(); ++i) c_[i]->compile_stream(c, child_path(path, i));
    if (c.stages.size() == first) return;
    inherit_placement(c, first);
    auto& s = c.stages[first];
    // Inner pipelines starting here were compiled first: this one goes before them.
    layer_plan mids = intermediates();
    if (!mids.empty()) s.entry_layers.insert(s.entry_layers.begin(), std::move(mids));
    if (capacity) s.capacity = capacity;
  }

  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    auto e = std::make_shared<exec>();
    e->p = this;
    e->keep = self();
    e->mids = intermediates();
    for (std::size_t i = 0; i < c_.size(); ++i) {
      e->parts.push_back(c_[i]->compile_inline(child_path(path, i)));
      e->in_place.push_back(c_[i]->in_place());
    }
    return e;
  }

  node_ptr self() const { return std::static_pointer_cast<const node_impl>(weak_self.lock()); }
  std::weak_ptr<pipeline_node> weak_self;

 private:
  struct exec final : executable {
    const pipeline_node* p;
    node_ptr keep;
    std::vector<std::shared_ptr<executable>> parts;
    std::vector<bool> in_place;
    layer_plan mids;
    void execute(exec_args& a) override {
      std::vector<layer> layers;
      mids.make(a.in->shape(), layers);
      layer* cur = a.in;
      std::size_t m = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        exec_args sub = a;
        sub.in = cur;
        if (in_place[i]) {
          sub.out = cur;
        } else if (int(i) == p->last_producing_) {
          sub.out = a.out;
        } else {
          sub.out = &layers[m++];
        }
        parts[i]->execute(sub);
        cur = sub.out;
      }
    }
  };

  std::vector<node_ptr> c_;
  int last_producing_;
};

node make_pipeline(std::vector<node> stages) {
  if (stages.empty()) throw graph_error("pipeline", "needs at least one stage");
  std::vector<node_ptr> c;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (!stages[i]) throw graph_error("pipeline[" + std::to_string(i) + "]", "empty node");
    c.push_back(stages[i].impl());
  }
  auto p = std::make_shared<pipeline_node>(std::move(c));
  p->weak_self = p;
  return node(p);
}

}  // namespace sinew::detail
