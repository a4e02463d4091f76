#pragma once
/// \file loop.hpp
/// `loop(body, until)` repeats `body` on a unit until `until(result, i)`
/// returns true (checked after each iteration; `i` = iterations done);
/// `for_loop(body, n)` runs it exactly `n` times. Iteration k+1 reads what
/// iteration k wrote, so the body's outputs must have the types of its inputs.
///
/// \code
/// // Jacobi-style relaxation until the residual buffer's first value is small:
/// auto solve = sinew::loop(sinew::map<Relax>(), [](const sinew::layer& r, std::size_t i) {
///   return r.get<float>(1)[0] < 1e-6f || i == 1000;
/// });
/// auto nbody = sinew::for_loop(sinew::map<NBodyStep>(), 10);
/// \endcode
#include <cstddef>
#include <functional>

#include <sinew/engine/node.hpp>

namespace sinew {

using loop_predicate = std::function<bool(const layer& result, std::size_t iterations)>;

node loop(node body, loop_predicate until, std::size_t max_iterations = SIZE_MAX);
node for_loop(node body, std::size_t n);

}  // namespace sinew
