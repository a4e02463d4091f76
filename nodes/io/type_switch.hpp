#pragma once
// Internal: calls a generic lambda with the C++ type behind a runtime
// element descriptor, for the types sinew::io knows by name.
#include <cstdint>

#include <sinew/engine/elem_type.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::io::detail {

template <class T>
struct type_tag {
  using type = T;
};

/// `f(type_tag<T>{})` for the type `t` describes; false if it is none of
/// i8 u8 i16 u16 i32 u32 i64 u64 f32 f64 rgba8.
template <class F>
bool visit_type(const elem_type& t, F&& f) {
  auto is = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!t.same_as(elem_type_of<T>())) return false;
    f(tag);
    return true;
  };
  return is(type_tag<std::int8_t>{}) || is(type_tag<std::uint8_t>{}) || is(type_tag<std::int16_t>{}) ||
         is(type_tag<std::uint16_t>{}) || is(type_tag<std::int32_t>{}) || is(type_tag<std::uint32_t>{}) ||
         is(type_tag<std::int64_t>{}) || is(type_tag<std::uint64_t>{}) || is(type_tag<float>{}) ||
         is(type_tag<double>{}) || is(type_tag<workloads::rgba8>{});
}

}  // namespace sinew::io::detail
