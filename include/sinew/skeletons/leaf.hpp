#pragma once
/// \file leaf.hpp
/// How a C++ functor becomes a leaf. The functor is a template parameter of
/// `map<F>` (so the compiler inlines and vectorises it: >3.5x in
/// [Marques14, §4.2.3, Fig. 4.4]) and its `operator()` signature says what
/// it reads and writes.
///
/// **Per element** (as the Saxpy functor of [Marques14, Listing 4.2]):
/// inputs by value (or const reference) from layer 0, outputs by pointer
/// into layer 1; an optional first `sinew::index` gives the element's
/// position. Parameters that are non-const references make the map *in
/// place* (it updates layer 0).
/// \code
/// struct Saxpy { float a; void operator()(float x, float y, float* z) const { *z = a * x + y; } };
/// struct Iota  { void operator()(sinew::index i, int* out) const { *out = int(i.linear); } };
/// struct Twice { void operator()(float& x) const { x *= 2; } };          // in place
/// \endcode
///
/// **Per chunk**: first parameter `sinew::chunk` (a range of the outermost
/// dimension: rows of an image, planes of a volume), then views of whole
/// buffers: `sinew::in<T, R>` for inputs, `sinew::out<T, R>` for outputs, or
/// `sinew::inout<T, R>` for in-place updates. Each view has its buffer's
/// shape, so after a zip of units of different shapes (an edge map and its
/// histogram) one leaf reads both; per-element and per-record leaves refuse
/// such a unit.
/// \code
/// struct Mirror {
///   void operator()(sinew::chunk c, sinew::in<rgba8, 2> src, sinew::out<rgba8, 2> dst) const {
///     for (size_t r = c.begin; r < c.end; ++r)
///       for (size_t x = 0; x < src.cols(); ++x) dst(r, x) = src(r, src.cols() - 1 - x);
///   }
/// };
/// \endcode
///
/// **Per record**: first parameter `sinew::record`, then `in`/`out`/`inout`
/// views of that one record of a record batch (records.hpp): a text line, a
/// fixed-size binary record. Units that are not batches are one record.
/// \code
/// struct Reverse {   // reverses every line of a batch of text lines
///   void operator()(sinew::record, sinew::inout<std::uint8_t> line) const {
///     std::reverse(line.begin(), line.end());
///   }
/// };
/// \endcode
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <sinew/engine/shape.hpp>
#include <sinew/engine/view.hpp>

namespace sinew {

/// Position of the element a per-element functor is called for.
struct index {
  std::size_t linear;
  const sinew::shape* shp;
  /// Coordinate along dimension d (0 = outermost).
  std::size_t coord(unsigned d) const {
    if (shp->rank == 1) return d == 0 ? linear : 0;
    if (shp->rank == 2) return d == 0 ? linear / shp->ext[1] : d == 1 ? linear % shp->ext[1] : 0;
    if (d == 0) return linear / shp->inner();
    if (d == 1) return (linear / shp->ext[2]) % shp->ext[1];
    return linear % shp->ext[2];
  }
};

/// The part of a unit a per-chunk functor must produce: outermost-dimension
/// indices [begin, end) of the output.
struct chunk {
  std::size_t begin;
  std::size_t end;
  std::size_t size() const noexcept { return end - begin; }
};

/// The record a per-record functor is called for.
struct record {
  std::size_t index;  ///< position in the batch (0 when the unit is one record)
  std::size_t first;  ///< its first element in the unit's layer 0
};

/// Input view of a per-chunk functor (layer 0, read only).
template <class T, unsigned R = 1>
struct in : view<const T, R> {
  using view<const T, R>::view;
  using element = T;
};
/// Output view of a per-chunk functor (layer 1).
template <class T, unsigned R = 1>
struct out : view<T, R> {
  using view<T, R>::view;
  using element = T;
};
/// In-place view of a per-chunk functor (layer 0, read and written).
template <class T, unsigned R = 1>
struct inout : view<T, R> {
  using view<T, R>::view;
  using element = T;
};

namespace detail {

enum class role { index, chunk, record, input, output, inplace };

template <class A>
struct arg_traits {
  using D = std::remove_cv_t<std::remove_reference_t<A>>;
  static constexpr bool is_ptr = std::is_pointer_v<A>;
  static constexpr bool is_mut_ref = std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>>;
  static constexpr role r = std::is_same_v<D, index>   ? role::index
                            : std::is_same_v<D, chunk> ? role::chunk
                            : is_ptr                   ? role::output
                            : is_mut_ref               ? role::inplace
                                                       : role::input;
  using elem = std::remove_cv_t<std::conditional_t<is_ptr, std::remove_pointer_t<A>, D>>;
  static constexpr unsigned rank = 1;
};
template <class T, unsigned R>
struct view_arg {
  using elem = T;
  static constexpr unsigned rank = R;
};
template <class A, class D = std::remove_cv_t<std::remove_reference_t<A>>>
struct chunk_arg_traits {
  static constexpr role r = std::is_same_v<D, record> ? role::record : role::chunk;
  using elem = void;
  static constexpr unsigned rank = 1;
};
template <class A, class T, unsigned R>
struct chunk_arg_traits<A, in<T, R>> : view_arg<T, R> { static constexpr role r = role::input; };
template <class A, class T, unsigned R>
struct chunk_arg_traits<A, out<T, R>> : view_arg<T, R> { static constexpr role r = role::output; };
template <class A, class T, unsigned R>
struct chunk_arg_traits<A, inout<T, R>> : view_arg<T, R> { static constexpr role r = role::inplace; };

template <class M>
struct member_call;
template <class C, class R, class... A>
struct member_call<R (C::*)(A...) const> { using args = std::tuple<A...>; };
template <class C, class R, class... A>
struct member_call<R (C::*)(A...)> { using args = std::tuple<A...>; };
template <class C, class R, class... A>
struct member_call<R (C::*)(A...) const noexcept> { using args = std::tuple<A...>; };
template <class C, class R, class... A>
struct member_call<R (C::*)(A...) noexcept> { using args = std::tuple<A...>; };

/// Parameters of F::operator() (which must not be overloaded or a template).
template <class F>
using functor_args = typename member_call<decltype(&F::operator())>::args;

/// The first parameter is `sinew::chunk` or `sinew::record`: the other
/// parameters are views.
template <class Tuple>
struct first_is_chunk : std::false_type {};
template <class A0, class... A>
struct first_is_chunk<std::tuple<A0, A...>>
    : std::bool_constant<std::is_same_v<std::remove_cv_t<std::remove_reference_t<A0>>, chunk> ||
                         std::is_same_v<std::remove_cv_t<std::remove_reference_t<A0>>, record>> {};
template <class Tuple>
struct first_is_record : std::false_type {};
template <class A0, class... A>
struct first_is_record<std::tuple<A0, A...>>
    : std::is_same<std::remove_cv_t<std::remove_reference_t<A0>>, record> {};

}  // namespace detail
}  // namespace sinew
