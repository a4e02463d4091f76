#include <sinew/engine/node.hpp>
#include <sinew/engine/sink.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

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

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? d : mangled;
  std::free(d);
  return s;
}

void node_impl::compile_stream(stream_compiler& c, const std::string& path) const {
  stage_spec s;
  s.path = path;
  s.exec = compile_inline(path);
  s.in_place = in_place();
  s.capacity = capacity;
  s.placement = placement_policy;
  c.stages.push_back(std::move(s));
}

void check_layer(const layer& l, const type_list& t, const char* which) {
  if (t.any) return;
  if (l.size() < t.types.size())
    throw error(std::string("expects ") + std::to_string(t.types.size()) + " " + which + " buffer(s) " +
                t.str() + " but the unit has " + std::to_string(l.size()));
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    const buffer& b = *l[unsigned(i)];
    if (b.type().size != t.types[i]->size)
      throw error(std::string(which) + " buffer " + std::to_string(i) + " holds " +
                  std::to_string(b.type().size) + "-byte elements, the leaf reads " +
                  demangle(t.types[i]->name) + " (" + std::to_string(t.types[i]->size) + " bytes)");
    if (b.count() < l.count())
      throw error(std::string(which) + " buffer " + std::to_string(i) + " has " + std::to_string(b.count()) +
                  " elements, the unit has " + std::to_string(l.count()));
  }
}

void copy_layer_into(const layer& from, unsigned buffers, void* const* dst, const char* who) {
  if (from.size() < buffers)
    throw error(std::string(who) + ": result has " + std::to_string(from.size()) + " buffer(s), container needs " +
                std::to_string(buffers));
  for (unsigned i = 0; i < buffers; ++i)
    if (dst[i] != from[i]->data()) std::memcpy(dst[i], from[i]->data(), from[i]->bytes());
}

}  // namespace sinew::detail
