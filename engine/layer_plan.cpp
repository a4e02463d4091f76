#include <sinew/engine/layer_plan.hpp>

#include <sinew/engine/node.hpp>

namespace sinew::detail {

void layer_plan::add(std::shared_ptr<const node_impl> stage, bool makes_layer, type_list types) {
  steps_.push_back({std::move(stage), makes_layer, std::move(types)});
  layers_ += makes_layer;
}

void layer_plan::make(const shape& in, std::vector<layer>& out) const {
  shape s = in;
  for (const step& st : steps_) {
    s = st.stage->output_shape(s);
    if (!st.makes_layer) continue;
    out.emplace_back(s);
    add_pool_buffers(out.back(), st.types);
  }
}

void layer_plan::insert(work_unit& u) const {
  shape s = u.in().shape();
  std::size_t below = 0;
  for (const step& st : steps_) {
    s = st.stage->output_shape(s);
    if (!st.makes_layer) continue;
    layer l(s);
    add_pool_buffers(l, st.types);
    u.insert_below(below++, std::move(l));
  }
}

}  // namespace sinew::detail
