#pragma once
/// \file pipeline.hpp
/// `pipeline(a, b, ...)`: stage i+1 reads what stage i wrote; stages run
/// concurrently on successive units. On entry the pipeline inserts one
/// buffer layer per intermediate result [Marques14, Fig. 4.6], as the
/// `layer_plan` it computes when the tree compiles says.
///
/// \code
/// auto images = sinew::pipeline(sinew::map<GaussianNoise>(), sinew::map<Solarize>(), sinew::map<Mirror>());
/// \endcode
#include <vector>

#include <sinew/engine/node.hpp>

namespace sinew {

namespace detail {
class pipeline_node;
node make_pipeline(std::vector<node> stages);
}  // namespace detail

/// Pipeline of one or more stages.
template <class... N>
node pipeline(N... stages) {
  static_assert(sizeof...(N) >= 1, "a pipeline needs at least one stage");
  return detail::make_pipeline(std::vector<node>{std::move(stages)...});
}
/// Pipeline from a list built at run time.
inline node pipeline(std::vector<node> stages) { return detail::make_pipeline(std::move(stages)); }

}  // namespace sinew
