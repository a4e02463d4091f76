// Element types as graph files name them (element_types.hpp).
#include "element_types.hpp"

#include <sinew/io/type_names.hpp>

#include "json_cursor.hpp"

namespace sinew::detail {

const elem_type& elem_type_at(const json_cursor& c) {
  std::string n = c.as_string();
  const elem_type* t = elem_type_by_name(n);
  if (!t) {
    std::string known;
    for (auto k : elem_type_names()) known += (known.empty() ? "" : ", ") + std::string(k);
    c.fail("unknown element type '" + n + "' (known: " + known + ")");
  }
  return *t;
}

std::string types_text(const type_list& t) {
  if (t.any) return "[any]";
  std::string s = "[";
  for (std::size_t i = 0; i < t.types.size(); ++i) s += (i ? ", " : "") + (t.types[i] ? io::type_name(*t.types[i]) : "?");
  return s + "]";
}

bool same_types(const type_list& a, const type_list& b) {
  if (a.any || b.any) return true;
  if (a.types.size() != b.types.size()) return false;
  for (std::size_t i = 0; i < a.types.size(); ++i)
    if (!a.types[i]->same_as(*b.types[i])) return false;
  return true;
}

}  // namespace sinew::detail
