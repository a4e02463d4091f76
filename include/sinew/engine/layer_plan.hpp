#pragma once
/// \file layer_plan.hpp
/// The intermediate layers a pipeline needs, planned when the tree compiles:
/// a unit entering a pipeline gets one layer per intermediate result (the
/// output of each producing stage but the last) right below layer 0
/// [Marques14, §4.3, Fig. 4.6]. The plan holds each stage's shape rule
/// (`node_impl::output_shape`) and output types, so the runtime makes the
/// layers without knowing the pipeline.
///
/// \code
/// sinew::detail::layer_plan p;
/// p.add(a, /*makes_layer*/ true, a->output_types());   // pipeline(a, b): a's result
/// p.insert(unit);               // unit.at(1) is now a's output, sized from unit.in()
/// \endcode
#include <memory>
#include <vector>

#include <sinew/engine/shape.hpp>
#include <sinew/engine/type_list.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew::detail {

class node_impl;

class layer_plan {
 public:
  /// Appends the next stage of the pipeline: its shape rule, and whether
  /// its result is an intermediate layer (with buffers of `types`).
  void add(std::shared_ptr<const node_impl> stage, bool makes_layer, type_list types);
  /// True when the plan makes no layer.
  bool empty() const noexcept { return layers_ == 0; }
  /// The layers for a unit whose layer 0 has shape `in`, first result first.
  void make(const shape& in, std::vector<layer>& out) const;
  /// Inserts the layers below layer 0 of `u`: the first result becomes
  /// layer 1, the next layer 2, ...
  void insert(work_unit& u) const;

 private:
  struct step {
    std::shared_ptr<const node_impl> stage;
    bool makes_layer;
    type_list types;
  };
  std::vector<step> steps_;
  unsigned layers_ = 0;
};

}  // namespace sinew::detail
