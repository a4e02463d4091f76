// Name -> element type descriptor, for leaves built at run time (JSON graphs,
// OpenCL kernels). The workload types are included so that "rgba8" is the very
// descriptor `elem_type_of<workloads::rgba8>()` the C++ leaves use.
#include <sinew/engine/elem_type.hpp>

#include <cstdint>
#include <utility>

#include <sinew/workloads/image.hpp>
#include <sinew/workloads/nbody.hpp>
#include <sinew/workloads/series.hpp>

namespace sinew {

namespace {
struct named_type {
  std::string_view name;
  const elem_type* type;
};
const std::vector<named_type>& table() {
  static const std::vector<named_type> t = {
      {"f32", &elem_type_of<float>()},          {"f64", &elem_type_of<double>()},
      {"i8", &elem_type_of<std::int8_t>()},     {"u8", &elem_type_of<std::uint8_t>()},
      {"i16", &elem_type_of<std::int16_t>()},   {"u16", &elem_type_of<std::uint16_t>()},
      {"i32", &elem_type_of<std::int32_t>()},   {"u32", &elem_type_of<std::uint32_t>()},
      {"i64", &elem_type_of<std::int64_t>()},   {"u64", &elem_type_of<std::uint64_t>()},
      {"rgba8", &elem_type_of<workloads::rgba8>()}, {"body", &elem_type_of<workloads::body>()},
      {"vel", &elem_type_of<workloads::vel>()}, {"coeff", &elem_type_of<workloads::coeff>()},
  };
  return t;
}
}  // namespace

const elem_type* elem_type_by_name(std::string_view name) {
  for (const named_type& n : table())
    if (n.name == name) return n.type;
  return nullptr;
}

const std::vector<std::string_view>& elem_type_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (const named_type& n : table()) v.push_back(n.name);
    return v;
  }();
  return names;
}

}  // namespace sinew
