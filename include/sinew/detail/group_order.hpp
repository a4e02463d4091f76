#pragma once
/// \file group_order.hpp
/// Locality-centric choice of work-item order for a loop inside a region of a
/// group kernel [Kim15, §3.2].
///
/// Every memory access of the loop body is classified by its stride with
/// respect to the loop index (L0, L1, LX) and to the work-item id (W0, W1,
/// WX); [Kim15, Table 1] says which order each class prefers:
///
/// |            | W0  | W1  | WX  |
/// |------------|-----|-----|-----|
/// | **L0**     |  -  | DFO | DFO |
/// | **L1**     | BFO |  -  | DFO |
/// | **LX**     | BFO | BFO |  -  |
///
/// (the smaller stride wins). The preferences are tallied; the larger count
/// wins and a tie goes to depth-first (§3.2.3). In a loop nest each level is
/// decided on its own and an inner breadth-first loop forces the loops around
/// it to breadth-first ("priority is given to the inner loops").
///
/// \code
/// using sinew::mem_access;
/// // acc += a[ly * T + k] * b[k * T + lx]  (a: L1 W0, b: LX W1, acc: L0 W1)
/// auto o = sinew::choose_order({mem_access{1, 0}, mem_access{64, 1}, mem_access{0, 1}});
/// assert(o == sinew::item_order::breadth_first);
/// \endcode
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>

namespace sinew {

/// Stride class of one memory access along one index [Kim15, Table 1].
enum class stride_class : unsigned char { zero, one, other };

/// Classifies a numeric stride: 0 is invariant, +-1 is unit stride.
constexpr stride_class classify_stride(long s) noexcept {
  return s == 0 ? stride_class::zero : (s == 1 || s == -1) ? stride_class::one : stride_class::other;
}

/// One memory access of a loop body: its stride (in elements) when the loop
/// index grows by one, and when the work-item id along the fastest dimension
/// of the work-group (the last one) grows by one. Use `any_stride` for
/// strides that are neither 0 nor 1 (indirect or data-dependent indices).
///
/// \code
/// sinew::mem_access a{1, 0};    // arr[k]: stride 1 along the loop, 0 along the work-items
/// assert(sinew::prefers(a) == sinew::preference::breadth_first);
/// \endcode
struct mem_access {
  static constexpr long any_stride = 2;
  long loop = 0;
  long item = 0;
  constexpr stride_class loop_class() const noexcept { return classify_stride(loop); }
  constexpr stride_class item_class() const noexcept { return classify_stride(item); }
};

/// Order of the work-items of a group around one loop: depth-first (each
/// work-item runs the whole loop, the work-item loop outside) or
/// breadth-first (all work-items run iteration k before k + 1).
enum class item_order : unsigned char { depth_first, breadth_first };

/// Which order an access prefers, or neither (the diagonal of Table 1).
enum class preference : unsigned char { none, depth_first, breadth_first };

/// [Kim15, Table 1]: the order giving the smaller stride.
constexpr preference prefers(const mem_access& a) noexcept {
  unsigned l = unsigned(a.loop_class()), w = unsigned(a.item_class());
  if (l == w) return preference::none;
  return l < w ? preference::depth_first : preference::breadth_first;
}

/// The tally rule of §3.2.3: majority of preferences, ties to depth-first.
/// `extra_depth_first`: accesses not in the list that prefer depth-first
/// (a carried per-work-item value, see `group::loop`).
constexpr item_order choose_order(std::span<const mem_access> accesses, unsigned extra_depth_first = 0) noexcept {
  int df = int(extra_depth_first), bf = 0;
  for (const mem_access& a : accesses) {
    preference p = prefers(a);
    df += p == preference::depth_first;
    bf += p == preference::breadth_first;
  }
  return bf > df ? item_order::breadth_first : item_order::depth_first;
}
constexpr item_order choose_order(std::initializer_list<mem_access> accesses, unsigned extra_depth_first = 0) noexcept {
  return choose_order(std::span<const mem_access>(accesses.begin(), accesses.size()), extra_depth_first);
}

/// Where the work-item loop goes in a nest of D loops: 0 = outside every loop
/// (all depth-first) ... D = inside the innermost loop (all breadth-first).
/// Loops [0, position) run breadth-first, loops [position, D) depth-first.
/// An inner breadth-first loop wins over depth-first loops around it
/// [Kim15, §3.2.3], so the position is one past the innermost
/// breadth-first level.
template <std::size_t D>
constexpr unsigned nest_position(const std::array<item_order, D>& per_level) noexcept {
  unsigned pos = 0;
  for (std::size_t l = 0; l < D; ++l)
    if (per_level[l] == item_order::breadth_first) pos = unsigned(l + 1);
  return pos;
}

}  // namespace sinew
