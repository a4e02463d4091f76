#include <sinew/engine/type_list.hpp>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/node.hpp>

namespace sinew::detail {

std::string type_list::str() const {
  if (any) return "[any]";
  std::string s = "[";
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i) s += ", ";
    s += types[i] ? demangle(types[i]->name) : "?";
  }
  return s + "]";
}

bool type_list::matches(const type_list& o) const {
  if (any || o.any) return true;
  if (types.size() != o.types.size()) return false;
  for (std::size_t i = 0; i < types.size(); ++i)
    if (types[i]->size != o.types[i]->size) return false;
  return true;
}

void bad_layer(const layer& l, const type_list& t, const char* which) {
  if (l.size() < t.types.size())
    throw error(std::string("expects ") + std::to_string(t.types.size()) + " " + which + " buffer(s) " +
                t.str() + " but the unit has " + std::to_string(l.size()));
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    const buffer& b = *l[unsigned(i)];
    if (b.type().size != t.types[i]->size)
      throw error(std::string(which) + " buffer " + std::to_string(i) + " holds " +
                  std::to_string(b.type().size) + "-byte elements, the leaf reads " +
                  demangle(t.types[i]->name) + " (" + std::to_string(t.types[i]->size) + " bytes)");
    if (const std::size_t want = l.shape_of(unsigned(i)).count(); b.count() < want)
      throw error(std::string(which) + " buffer " + std::to_string(i) + " has " + std::to_string(b.count()) +
                  " elements, its shape " + l.shape_of(unsigned(i)).str() + " has " + std::to_string(want));
  }
  throw error(std::string(which) + " buffers do not match " + t.str());  // not reached: check_layer saw a mismatch
}

void not_uniform(const layer& l, const char* leaf) {
  unsigned i = 0;
  while (i < l.size() && l.shape_of(i) == l.shape()) ++i;
  throw error("input buffer " + std::to_string(i) + " has shape " + l.shape_of(i).str() + ", the unit " +
              l.shape().str() + " (a zip or join of units of different shapes): " + leaf +
              " reads every buffer at the same element; a per-chunk leaf (sinew::chunk) sees each buffer with its "
              "own shape");
}

void add_pool_buffers(layer& l, const type_list& t) {
  for (const elem_type* e : t.types) l.add(buffer_pool::global().acquire(l.count(), *e));
}

}  // namespace sinew::detail
