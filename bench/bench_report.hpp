#pragma once
// sinew-bench: machine description and JSON output (internal to bench/).
#include <string>
#include <vector>

#include "bench.hpp"

namespace sinew_bench {

struct machine_info {
  std::string cpu_model, cpu_flags, hostname, kernel, compiler, build_type, build_flags,
      build_flags_from_macros, date, sinew_version, git_commit, tbb_version, openmp, sinew_scheduler;
  /// The commit libsinew was built from (sinew::build_commit()); `git_commit`
  /// is the checkout's HEAD when the benchmark ran, which need not be it
  /// (binaries carried to another machine, a copy of the tree there).
  std::string build_commit;
  unsigned logical_cpus = 0, physical_cores = 0, hardware_concurrency = 0, sinew_scheduler_threads = 0;
  unsigned numa_nodes = 0;  ///< /sys/devices/system/node/node*
  /// OpenCL devices, one "id: name (kind, N CUs, platform)" each; empty when none.
  std::vector<std::string> opencl_devices;
  /// Best parallel STREAM triad of this run, GB/s (0: stream_triad did not run).
  double stream_triad_gbs = 0;
};

machine_info describe_machine();

bool write_json(const std::string& path, const machine_info& m, const config& c,
                const std::vector<result>& results, const std::string& command_line);

}  // namespace sinew_bench
