#include <sinew/engine/shape.hpp>

namespace sinew {

// Out of line: GCC 12 warns (-Wrestrict, a false positive) when it inlines
// this string building into callers.
std::string shape::str() const {
  std::string s = "[";
  s += std::to_string(ext[0]);
  for (unsigned d = 1; d < rank; ++d) {
    s += 'x';
    s += std::to_string(ext[d]);
  }
  s += ']';
  return s;
}

}  // namespace sinew
