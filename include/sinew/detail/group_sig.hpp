#pragma once
/// \file group_sig.hpp
/// The signature of a group kernel's `operator()(group&, views...)`: the
/// role of each view (in, out, inout), the element types of the layers it
/// reads and writes, and whether it runs in place.
///
/// \code
/// using S = sinew::detail::group_sig<Scale2>;   // (group&, in<float>, out<float>)
/// static_assert(S::N == 3 && !S::in_place);
/// \endcode
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <sinew/engine/node.hpp>
#include <sinew/skeletons/group.hpp>
#include <sinew/skeletons/leaf.hpp>

namespace sinew::detail {

/// Signature of a group kernel: `(group&, in/out/inout views...)`.
template <class K>
struct group_sig {
  using args = functor_args<K>;
  static constexpr std::size_t N = std::tuple_size_v<args>;
  static_assert(N >= 1 && std::is_same_v<std::tuple_element_t<0, args>, group&>,
                "a group kernel's operator() takes sinew::group& first, then sinew::in/out/inout views");
  template <std::size_t I>
  using arg_t = std::remove_cv_t<std::remove_reference_t<std::tuple_element_t<I, args>>>;
  template <std::size_t I>
  using tr = chunk_arg_traits<arg_t<I>>;

  template <std::size_t... I>
  static constexpr std::array<role, N - 1> roles_impl(std::index_sequence<I...>) { return {tr<I + 1>::r...}; }
  static constexpr std::array<role, N - 1> roles = roles_impl(std::make_index_sequence<N - 1>{});
  static constexpr bool in_place = [] {
    for (role r : roles)
      if (r == role::inplace) return true;
    return false;
  }();
  static constexpr bool valid = [] {
    bool out = false;
    for (role r : roles) {
      if (r != role::input && r != role::output && r != role::inplace) return false;
      out = out || r == role::output;
    }
    return !(in_place && out);
  }();
  static_assert(valid, "group kernel views are sinew::in/out/inout, and a kernel either updates "
                       "its input in place (inout) or writes outputs (out), not both");

  static type_list types(bool outputs) {
    type_list t;
    add_types<0>(t, outputs);
    return t;
  }
  template <std::size_t I>
  static void add_types(type_list& t, bool outputs) {
    if constexpr (I < N - 1) {
      role r = roles[I];
      bool is_out = r == role::output, is_in = r == role::input || r == role::inplace;
      if ((outputs && (is_out || (in_place && is_in))) || (!outputs && is_in))
        t.types.push_back(&elem_type_of<typename tr<I + 1>::elem>());
      add_types<I + 1>(t, outputs);
    }
  }
};

}  // namespace sinew::detail
