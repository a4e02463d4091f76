#pragma once
// Internal: the OpenCL objects behind sinew::opencl::device (not installed;
// public headers stay free of CL/cl.h).
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sinew/opencl/coherence.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/opencl/platform.hpp>

namespace sinew::opencl::detail {

/// "CL_OUT_OF_RESOURCES" for -5.
const char* cl_error_name(cl_int e);
/// Throws sinew::error "opencl: <what> on <where>: CL_..." unless e == CL_SUCCESS.
void check(cl_int e, const char* what, const std::string& where);

struct device_state;

/// A device's memory as a coherence space: copies in device memory, or the
/// host memory itself (CL_MEM_USE_HOST_PTR) synchronised by map/unmap.
class cl_space final : public coherence::memory_space {
 public:
  cl_space(device_state& d, bool unified) : d_(d), unified_(unified) {}
  std::string name() const override;
  bool shares_host() const override { return unified_; }
  void* allocate(void* host, std::size_t bytes) override;
  void release(void* handle) noexcept override;
  void upload(void* handle, std::size_t offset, const void* src, std::size_t n) override;
  void download(void* handle, std::size_t offset, void* dst, std::size_t n) override;
  void sync_to_host(void* handle, std::size_t offset, std::size_t n) override;

  /// The calling thread has already made bytes [offset, offset + n) of
  /// `handle` visible to the host: a kernel leaf enqueued their map and
  /// unmap right after its kernel, on the kernel's queue, and waited once
  /// for all of it. The next sync_to_host of exactly that range on this
  /// thread (the coherence access ending) then returns at once instead of
  /// doing two more round trips through the driver. forget_presynced()
  /// drops what is left (the leaf calls it when it ends, in every case).
  static void presynced(void* handle, std::size_t offset, std::size_t n);
  static void forget_presynced() noexcept;

 private:
  device_state& d_;
  bool unified_;
};

struct device_state {
  device_info info;
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context ctx = nullptr;
  cl_command_queue queues[2] = {nullptr, nullptr};
  std::atomic<unsigned> next_queue{0};
  std::unique_ptr<cl_space> unified_space, copy_space;
  std::once_flag opened;

  std::string label() const { return info.id + " (" + to_string(info.kind) + ")"; }
  /// Creates the context (shared by the platform's devices) and queues once.
  void open();
  /// Queues are used round robin by successive kernel launches.
  cl_command_queue queue() { return queues[next_queue.fetch_add(1, std::memory_order_relaxed) & 1]; }
  coherence::memory_space& space(memory_mode m) {
    return m == memory_mode::automatic && unified_space ? *unified_space : *copy_space;
  }
};

/// Every device found, discovered once per process (empty without a platform).
const std::vector<std::shared_ptr<device_state>>& all_devices();

}  // namespace sinew::opencl::detail

namespace sinew::opencl::detail {

/// The program built from `source` with `options` for device `d`, from the
/// memory cache, the disk cache or the compiler (see program_cache.hpp).
/// `origin` names the source in errors (file name). Throws sinew::error with
/// the build log when it does not build. The program is owned by the cache.
cl_program get_program(device_state& d, const std::string& source, const std::string& options,
                       const std::string& origin);

}  // namespace sinew::opencl::detail
