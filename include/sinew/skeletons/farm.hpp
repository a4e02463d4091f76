#pragma once
/// \file farm.hpp
/// `farm(worker, n)`: up to `n` units go through `worker` at once. Output
/// keeps input order unless `farm_order::unordered` is given. Workers must
/// not depend on which replica ran an earlier unit (leaves are functions of
/// their inputs), so a farm of a pipeline runs as a pipeline whose stages
/// each admit `n` units, with order restored where the farm ends.
///
/// \code
/// auto f = sinew::farm(sinew::map<Solarize>(), 4);                           // ordered
/// auto g = sinew::farm(sinew::map<Solarize>(), 4, sinew::farm_order::unordered);
/// \endcode
#include <sinew/engine/node.hpp>

namespace sinew {

enum class farm_order { ordered, unordered };

/// `n` must be at least 1.
node farm(node worker, unsigned n, farm_order order = farm_order::ordered);

}  // namespace sinew
