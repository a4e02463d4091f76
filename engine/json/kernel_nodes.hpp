#pragma once
// Kernels named in a graph file: the registered kernel a name stands for, its
// "args" bound to the kernel's parameters, and the sequential reference leaf
// that --verify runs in its place.
#include <sinew/json/kernel_registry.hpp>

namespace sinew::detail {

class json_cursor;

/// The registered C++ kernel named at `c` (error with the known names).
const kernel_info& kernel_at(const json_cursor& c);
/// The "args" object of `c` bound to `k`'s parameters.
kernel_args args_at(const json_cursor& c, const kernel_info& k);
/// `k`'s sequential reference as a leaf (the kernel's own leaf if it has none).
node reference_node(const kernel_info& k, const kernel_args& args);

}  // namespace sinew::detail
