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


}  // namespace sinew
