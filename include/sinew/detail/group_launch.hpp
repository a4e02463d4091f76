#pragma once
/// \file group_launch.hpp
/// The launch of a group kernel over one unit: its index space, rounded up
/// to whole work-groups (the OpenCL 1.2 host idiom).
///
/// \code
/// sinew::range global = sinew::range1d{100};
/// auto L = sinew::detail::make_launch(kernel, &global, sinew::range1d{64}, unit_shape);
/// assert(L.groups[0] == 2 && L.lim[0] == 100);   // 128 work-items run, 100 in range
/// \endcode
#include <array>
#include <concepts>
#include <cstddef>
#include <string>

#include <sinew/engine/error.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/skeletons/group_range.hpp>

namespace sinew::detail {

/// The index space of one launch and its work-groups.
struct group_launch {
  range global;       ///< the index space as given (not rounded up)
  range local;
  range groups;       ///< work-groups per dimension
  std::array<std::size_t, 3> lim{1, 1, 1};
};

template <class K>
concept kernel_with_global_range = requires(const K& k, const shape& s) {
  { k.global_range(s) } -> std::convertible_to<range>;
};

/// Index space of a launch: the explicit one, the kernel's `global_range`,
/// or the input shape; rounded up to whole groups.
template <class K>
group_launch make_launch(const K& k, const range* global, const range& local, const shape& in) {
  group_launch L;
  L.local = local;
  if (global) L.global = *global;
  else if constexpr (kernel_with_global_range<K>) L.global = k.global_range(in);
  else L.global = range{in.rank, in.ext};
  if (L.global.rank != local.rank)
    throw error("index space " + L.global.str() + " has rank " + std::to_string(L.global.rank) +
                " but the work-group " + local.str() + " has rank " + std::to_string(local.rank));
  L.groups.rank = local.rank;
  for (unsigned d = 0; d < 3; ++d) {
    std::size_t g = d < local.rank ? L.global.ext[d] : 1, l = d < local.rank ? local.ext[d] : 1;
    L.lim[d] = g;
    L.groups.ext[d] = (g + l - 1) / l;
  }
  return L;
}

}  // namespace sinew::detail
