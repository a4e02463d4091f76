#pragma once
// Where the benchmarks find graphs/kernels/*.cl.
//
//   std::string f = sinew_bench::kernel_file("saxpy.cl");
#include <cstdlib>
#include <filesystem>
#include <string>

namespace sinew_bench {

/// graphs/kernels/<name>: $SINEW_KERNELS_DIR when set (a copy of the tree at
/// another path, e.g. on the device machine), else in the source tree.
inline std::string kernel_file(const char* name) {
  if (const char* d = std::getenv("SINEW_KERNELS_DIR")) return (std::filesystem::path(d) / name).string();
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "graphs" / "kernels" / name).string();
}

}  // namespace sinew_bench
