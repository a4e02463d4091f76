#pragma once
// Element types as graph files name them ("f32", "rgba8", ...): looking a
// name up with an error at its JSON pointer, printing type lists in messages,
// and what flows on an edge while a file's tree is checked.
#include <string>

#include <sinew/engine/elem_type.hpp>
#include <sinew/engine/node.hpp>

namespace sinew::detail {

class json_cursor;

/// What flows on an edge while the tree is checked.
struct flow {
  type_list types;
  unsigned rank = 0;  ///< 0 = unknown
};

/// The element type named at `c` (error listing the known names).
const elem_type& elem_type_at(const json_cursor& c);
/// "[f32, rgba8]" with the graph-file names of the types.
std::string types_text(const type_list& t);
/// Same element types (by name, not only by size).
bool same_types(const type_list& a, const type_list& b);

}  // namespace sinew::detail
