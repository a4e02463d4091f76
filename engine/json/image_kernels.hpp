#pragma once
// Internal: the built-in image feature kernels (edges, luma_histogram,
// edge_contrast), registered with the other built-in kernels.
#include <sinew/json/kernel_registry.hpp>

namespace sinew::detail {

void register_image_kernels(kernel_registry& r);

}  // namespace sinew::detail
