#pragma once
// Reference results of --verify (verifying_sink.cpp, dag_verifier.cpp).
#include <string>

#include <sinew/engine/shape.hpp>
#include <sinew/engine/type_list.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew::detail {

/// A layer of `s` with one pooled buffer per type of `t`.
layer make_layer(const shape& s, const type_list& t);
/// A deep copy of `from` (buffers from the pool).
layer copy_layer(const layer& from);
/// "" if `got` equals `want` (within relative `tol` for floating-point
/// buffers), else the first difference.
std::string compare_layers(const layer& got, const layer& want, double tol);

}  // namespace sinew::detail
