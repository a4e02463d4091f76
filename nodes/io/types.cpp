// record_layout and the short element type names of sinew::io. The workload
// types are named here so that "rgba8" is the very descriptor
// `elem_type_of<workloads::rgba8>()` the C++ leaves use.
#include <sinew/io/record_layout.hpp>
#include <sinew/io/type_names.hpp>

#include <sinew/engine/error.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/engine/work_unit.hpp>
#include <sinew/workloads/image.hpp>
#include <sinew/workloads/nbody.hpp>
#include <sinew/workloads/series.hpp>

#include <cstdint>

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

namespace sinew::io {

std::string type_name(const elem_type& type) {
  for (std::string_view n : elem_type_names())
    if (type.same_as(*elem_type_by_name(n))) return std::string(n);
  return sinew::detail::demangle(type.name);
}

std::size_t record_layout::bytes() const {
  std::size_t s = 0;
  for (const elem_type* t : buffers) s += t ? shape.count() * t->size : 0;
  return s;
}

std::string record_layout::str() const {
  std::string s;
  for (const elem_type* t : buffers) {
    if (!s.empty()) s += ',';
    s += t ? type_name(*t) : "null";
  }
  return s + " " + shape.str();
}

void record_layout::check(const std::string& who) const {
  if (buffers.empty()) throw error(who + ": the record layout has no buffers");
  if (buffers.size() > layer::max_buffers)
    throw error(who + ": the record layout has " + std::to_string(buffers.size()) + " buffers, a unit holds at most " +
                std::to_string(layer::max_buffers));
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (!buffers[i]) throw error(who + ": buffer " + std::to_string(i) + " of the record layout has no type");
  if (shape.rank < 1 || shape.rank > 3) throw error(who + ": the record layout's shape has rank " + std::to_string(shape.rank));
  if (bytes() == 0) throw error(who + ": the record layout " + str() + " describes zero-byte records");
}

}  // namespace sinew::io
