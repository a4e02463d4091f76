#pragma once
/// \file elem_type.hpp
/// Run-time description of a buffer's element type, used to check that a
/// leaf's typed views match the buffers a unit carries.
///
/// \code
/// const sinew::elem_type& t = sinew::elem_type_of<float>();
/// assert(t.size == 4);
/// \endcode
#include <cstddef>
#include <string_view>
#include <vector>
#include <type_traits>
#include <typeinfo>

namespace sinew {

struct elem_type {
  std::size_t size;
  std::size_t align;
  const char* name;  ///< implementation type name (typeid), for messages
  bool same_as(const elem_type& o) const {
    return this == &o || (size == o.size && std::string_view(name) == o.name);
  }
};

/// The descriptor of `T` (one per type; compared by identity, then by name).
template <class T>
const elem_type& elem_type_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_trivially_copyable_v<U>, "buffer elements must be trivially copyable");
  static const elem_type t{sizeof(U), alignof(U), typeid(U).name()};
  return t;
}

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
