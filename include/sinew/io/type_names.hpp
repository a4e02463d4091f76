#pragma once
/// \file io/type_names.hpp
/// Element types by their short names ("f32", "rgba8", ...), for leaves,
/// layouts and messages built at run time (graph files, OpenCL kernels,
/// record streams): `sinew::elem_type_by_name` and its reverse `io::type_name`.
///
/// \code
/// const sinew::elem_type* t = sinew::elem_type_by_name("f32");
/// std::string n = sinew::io::type_name(*t);                      // "f32"
/// \endcode
#include <string>
#include <string_view>
#include <vector>

#include <sinew/engine/elem_type.hpp>

namespace sinew {

/// The descriptor named `name` for run-time built leaves (JSON graphs, OpenCL
/// kernels): scalars "f32" "f64" "i8" "u8" "i16" "u16" "i32" "u32" "i64"
/// "u64", and the workload element types "rgba8", "body", "vel" (float4-like
/// n-body records) and "coeff" (two doubles, Series). Returns the same
/// object as `elem_type_of<T>()`, so run-time and C++ leaves match; null for
/// an unknown name.
///
/// \code
/// const sinew::elem_type* t = sinew::elem_type_by_name("f32");
/// assert(t == &sinew::elem_type_of<float>());
/// \endcode
const elem_type* elem_type_by_name(std::string_view name);
/// The names `elem_type_by_name` accepts, for error messages ("f32, f64, ...").
const std::vector<std::string_view>& elem_type_names();

}  // namespace sinew

namespace sinew::io {

/// Short name of `t` ("f32", ...), or its demangled C++ name if it has none.
std::string type_name(const sinew::elem_type& t);

}  // namespace sinew::io
