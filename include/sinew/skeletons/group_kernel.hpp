#pragma once
/// \file group_kernel.hpp
/// `group_kernel<K>`: a leaf written in the OpenCL style -- an index space of
/// work-items grouped into work-groups, with group-local memory and barriers
/// -- run on CPU workers without OpenCL and without a thread per work-item.
///
/// A work-group runs on one worker. The kernel's `operator()` is called once
/// per group with a `sinew::group&` and views of the unit's buffers; it is
/// written as a sequence of *regions*: each `g.each(...)` / `g.loop(...)`
/// call runs its body for every work-item of the group (a work-item loop,
/// [Zhang18, §3.2.2], [Kim15, §2]) and a barrier separates consecutive calls,
/// so barrier semantics are exact. Control flow between regions is uniform
/// (the same for the whole group), which is what OpenCL requires of code
/// around a barrier; a barrier inside a uniform loop is a C++ loop around
/// regions. Values that live across barriers are kept per work-item
/// (`g.per_item<T>()`, the scalar expansion of [Zhang18, §3.4.1]); group-local
/// memory (`g.local_mem<T>(n)`) and group-local atomics (`group::atomic_add`,
/// ...) are plain memory and plain read-modify-write [Zhang18, §3.2.3, Fig. 6],
/// since no two work-items of a group ever run at once.
///
/// A loop inside a region (`g.loop(K, accesses, body)`) runs depth-first or
/// breadth-first over the work-items [Kim15]: chosen from the strides the
/// kernel declares for the loop's memory accesses (Table 1), by timing both
/// orders on the first groups (`order_policy::measured`), or forced. A loop
/// may carry a per-work-item accumulator (`g.loop(K, accesses, acc, body)`),
/// kept in a register when the loop runs depth-first.
///
/// The index space is rounded up to whole work-groups (the usual OpenCL 1.2
/// host idiom): work-items past the range run too, so every work-item reaches
/// every barrier, and must not touch data out of range (`it.in_range()`).
/// Dimension 0 is the outermost (as in `sinew::shape`); the last dimension is
/// the fastest, i.e. OpenCL's dimension 0.
///
/// \code
/// struct Scale2 {   // out[i] = 2 * in[i], staged through local memory
///   void operator()(sinew::group& g, sinew::in<float> x, sinew::out<float> y) const {
///     auto tile = g.local_mem<float>(g.local_count());
///     g.each([&](const sinew::item& it) { tile[it.local_linear()] = it.in_range() ? x[it.global_id(0)] : 0; });
///     g.each([&](const sinew::item& it) { if (it.in_range()) y[it.global_id(0)] = 2 * tile[it.local_linear()]; });
///   }
/// };
/// sinew::graph gr(sinew::group_kernel<Scale2>(sinew::range1d{64}));  // index space = the unit's shape
/// gr.run(sinew::from_arrays(x), sinew::into_arrays(y)).get();
/// \endcode
///
/// This header is the whole group-kernel API: index spaces
/// (group_range.hpp), the order policy (group_options.hpp), work-items and
/// per-item values (group_item.hpp) and the work-group (group.hpp); the
/// node and its executor are internals (detail/group_exec.hpp).
#include <memory>
#include <optional>
#include <utility>

#include <sinew/detail/group_exec.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/skeletons/group.hpp>
#include <sinew/skeletons/group_item.hpp>
#include <sinew/skeletons/group_options.hpp>
#include <sinew/skeletons/group_range.hpp>

namespace sinew {

/// A group-kernel leaf over the index space `global` in work-groups of
/// `local` (same rank). Usable wherever a leaf is (pipeline, farm, graph).
template <class K>
node group_kernel(range global, range local, K k = K{}, group_options o = {}) {
  return node(std::make_shared<detail::group_node<K>>(std::move(k), global, local, o));
}
/// As above; the index space is the kernel's `range global_range(const
/// shape&) const` if it has one, else the shape of each unit's input.
template <class K>
node group_kernel(range local, K k = K{}, group_options o = {}) {
  return node(std::make_shared<detail::group_node<K>>(std::move(k), std::nullopt, local, o));
}

}  // namespace sinew
