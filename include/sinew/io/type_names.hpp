#pragma once
/// \file io/type_names.hpp
/// The short name of an element type ("f32", "rgba8", ...), the reverse of
/// `sinew::elem_type_by_name` (elem_type.hpp), for messages and layouts.
///
/// \code
/// const sinew::elem_type* t = sinew::elem_type_by_name("f32");
/// std::string n = sinew::io::type_name(*t);                      // "f32"
/// \endcode
#include <string>

#include <sinew/engine/elem_type.hpp>

namespace sinew::io {

/// Short name of `t` ("f32", ...), or its demangled C++ name if it has none.
std::string type_name(const sinew::elem_type& t);

}  // namespace sinew::io
