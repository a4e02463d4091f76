#pragma once
/// \file io/type_names.hpp
/// Short names of the element types the I/O sources and sinks know how to
/// fill and describe: "i8" "u8" "i16" "u16" "i32" "u32" "i64" "u64" "f32"
/// "f64" "rgba8". (`sinew::elem_type` itself only carries the C++ type
/// name; these are the names used in messages and in JSON pipelines.)
///
/// \code
/// const sinew::elem_type* t = sinew::io::type_by_name("f32");   // &elem_type_of<float>()
/// std::string n = sinew::io::type_name(*t);                      // "f32"
/// \endcode
#include <string>
#include <string_view>

#include <sinew/elem_type.hpp>

namespace sinew::io {

/// The descriptor named `name`, or null if unknown.
const sinew::elem_type* type_by_name(std::string_view name);
/// Short name of `t` ("f32", ...), or its demangled C++ name if it has none.
std::string type_name(const sinew::elem_type& t);

}  // namespace sinew::io
