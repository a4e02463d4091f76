#include <sinew/engine/node.hpp>

#include <cxxabi.h>

#include <cstdlib>

namespace sinew::detail {

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

}  // namespace sinew::detail
