#pragma once
// Where tests, benchmarks and examples find files of the source tree
// (graphs/kernels/*.cl, graph files), whatever the working directory and
// however the compiler saw the source paths (ccache's base_dir makes
// __FILE__ relative, so nothing here derives a path from __FILE__).
//
//   std::string f = sinew_support::kernel_file("saxpy.cl");
//   auto g = sinew_support::source_path("graphs/saxpy.json");
#include <string>

namespace sinew_support {

/// Absolute path of the source tree this build was configured from.
const char* source_dir();

/// <source_dir>/<relative>.
std::string source_path(const std::string& relative);

/// graphs/kernels: $SINEW_KERNELS_DIR when set (a copy of the tree at
/// another path, e.g. on the device machine), else in the source tree.
std::string kernel_dir();

/// kernel_dir()/<name>.
std::string kernel_file(const std::string& name);

}  // namespace sinew_support
