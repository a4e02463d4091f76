// A kernel plugin as users write one: a shared library exporting
// `sinew_register_kernels`. Loaded by tests/test_graph_file.cpp through a
// graph file's "plugins" field.
#include <sinew/json/kernel_registry.hpp>

namespace {
/// y = x + k (i32).
struct add_const_i32 {
  int k = 1;
  void operator()(int x, int* y) const { *y = x + k; }
};
}  // namespace

extern "C" void sinew_register_kernels(sinew::kernel_registry& r) {
  r.add_map<add_const_i32>("plugin_add_const", "y = x + k (i32), from a plugin",
                           {sinew::kernel_param::integer("k", "constant to add", 1)},
                           [](const sinew::kernel_args& a) { return add_const_i32{a.get<int>("k")}; });
}
