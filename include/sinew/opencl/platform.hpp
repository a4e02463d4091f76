#pragma once
/// \file opencl/platform.hpp
/// OpenCL platforms and devices as Sinew sees them: one context per platform,
/// two in-order command queues per device (one for transfers and kernels of
/// one unit while the other serves the next; [Xu15]: one queue per
/// device and thread; [Takizawa15]: transfers overlapped with kernels), created
/// once per process and reused ([Lee15]: context creation costs).
///
/// \code
/// for (const sinew::opencl::device_info& d : sinew::opencl::list_devices())
///   std::printf("%s  %s  %s  %u CUs\n", d.id.c_str(), sinew::opencl::to_string(d.kind), d.name.c_str(),
///               d.compute_units);
/// std::vector<sinew::opencl::device> cpus = sinew::opencl::select_devices("cpu");  // or "gpu", "all", "pocl:0"
/// \endcode
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <sinew/opencl/coherence.hpp>

namespace sinew::opencl {

/// How a leaf holds its buffers on a device. `automatic`: mapped host memory
/// where the device shares it (`host_unified_memory`, [Lee15]),
/// device copies otherwise. `copy`: always separate device memory with
/// transfers (e.g. to exercise the transfer path on a CPU device).
enum class memory_mode { automatic, copy };

enum class device_kind { cpu, gpu, accelerator, other };

struct device_info {
  std::string id;  ///< stable short id "<platform short name>:<index>", e.g. "pocl:0", "nvidia:0"
  std::string platform, name, vendor, driver_version, opencl_version;
  device_kind kind = device_kind::other;
  unsigned compute_units = 0;
  std::size_t global_mem = 0, max_alloc = 0, local_mem = 0, max_work_group = 0;
  bool host_unified_memory = false;
};

/// Every device of every platform; empty when no platform is installed
/// (never throws for that).
std::vector<device_info> list_devices();
/// "cpu", "gpu", "accelerator", "other".
const char* to_string(device_kind);

namespace detail {
struct device_state;
}

/// A handle to one device (its context, queues, memory space); cheap to copy.
///
/// \code
/// sinew::opencl::device d = sinew::opencl::select_devices("pocl:0").at(0);
/// std::printf("%s\n", d.info().name.c_str());
/// \endcode
class device {
 public:
  device() = default;
  explicit device(std::shared_ptr<detail::device_state> s) : s_(std::move(s)) {}
  const device_info& info() const;
  /// "pocl:0 (cpu)".
  std::string label() const;
  const std::shared_ptr<detail::device_state>& state() const noexcept { return s_; }
  /// The memory space leaves with memory mode `m` use on this device (its
  /// transfer counters, its budget: `d.memory(m).set_budget(bytes)`).
  coherence::memory_space& memory(memory_mode m) const;
  explicit operator bool() const noexcept { return s_ != nullptr; }
  friend bool operator==(const device& a, const device& b) { return a.s_ == b.s_; }

 private:
  std::shared_ptr<detail::device_state> s_;
};

/// Devices matching `what`: "cpu", "gpu", "accelerator", "all", a device id
/// ("pocl:0"), or a comma-separated list of those. Throws `sinew::error`
/// naming what exists when no platform is installed or nothing matches.
std::vector<device> select_devices(std::string_view what);

}  // namespace sinew::opencl
