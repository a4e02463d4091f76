#pragma once
/// \file group_item.hpp
/// What a region of a group kernel works with: the work-item it runs for,
/// values kept per work-item across barriers, and the memory accesses a
/// loop declares (skeletons/group.hpp).
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>

#include <sinew/detail/group_order.hpp>

namespace sinew {

/// One work-item as a region body sees it.
///
/// \code
/// g.each([&](const sinew::item& it) {
///   if (it.in_range()) out(it.global_id(0), it.global_id(1)) = tile[it.local_linear()];
/// });
/// \endcode
struct item {
  std::size_t lin;                 ///< local linear id (row-major in the group)
  std::array<std::size_t, 3> l;    ///< local id per dimension
  std::array<std::size_t, 3> g;    ///< global id per dimension
  const std::size_t* lim;          ///< global range per dimension (1 past the rank)

  std::size_t local_linear() const noexcept { return lin; }
  std::size_t local_id(unsigned d) const noexcept { return l[d]; }
  std::size_t global_id(unsigned d) const noexcept { return g[d]; }
  /// False for the work-items that pad the last group of a dimension.
  bool in_range() const noexcept { return g[0] < lim[0] && g[1] < lim[1] && g[2] < lim[2]; }
};

/// A value per work-item that lives across barriers, indexed by the item.
///
/// \code
/// auto sum = g.per_item<int>();                                  // all 0
/// g.each([&](const sinew::item& it) { sum[it] = x[it.global_id(0)]; });
/// g.each([&](const sinew::item& it) { y[it.global_id(0)] = sum[it] * 2; });  // after a barrier
/// \endcode
template <class T>
class per_item_array {
 public:
  per_item_array(T* p, std::size_t n) : p_(p), n_(n) {}
  T& operator[](const item& it) const noexcept { return p_[it.lin]; }
  T& operator[](std::size_t local_linear) const noexcept { return p_[local_linear]; }
  std::size_t size() const noexcept { return n_; }
  T* data() const noexcept { return p_; }

 private:
  T* p_;
  std::size_t n_;
};

/// The accesses a loop declares: a braced list, a std::array or a span.
///
/// \code
/// g.loop(n, {sinew::mem_access{1, 0}, sinew::mem_access{0, 1}}, body);   // braced list
/// static constexpr std::array<sinew::mem_access, 1> acc{sinew::mem_access{1, 0}};
/// g.loop(n, acc, body);                                                 // array
/// \endcode
class access_list {
 public:
  access_list(std::initializer_list<mem_access> l) : s_(l.begin(), l.size()) {}
  access_list(std::span<const mem_access> s) : s_(s) {}
  template <std::size_t N>
  access_list(const std::array<mem_access, N>& a) : s_(a.data(), N) {}
  std::span<const mem_access> span() const noexcept { return s_; }

 private:
  std::span<const mem_access> s_;
};

}  // namespace sinew
