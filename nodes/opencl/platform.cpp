// OpenCL platform and device discovery, contexts and queues (one context per
// platform, two in-order queues per device), and the device memory spaces.
#include "device.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace sinew::opencl {

namespace detail {

const char* cl_error_name(cl_int e) {
  switch (e) {
#define SINEW_CL_ERR(x) case x: return #x;
    SINEW_CL_ERR(CL_DEVICE_NOT_FOUND) SINEW_CL_ERR(CL_DEVICE_NOT_AVAILABLE) SINEW_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    SINEW_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE) SINEW_CL_ERR(CL_OUT_OF_RESOURCES) SINEW_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    SINEW_CL_ERR(CL_BUILD_PROGRAM_FAILURE) SINEW_CL_ERR(CL_MAP_FAILURE) SINEW_CL_ERR(CL_INVALID_VALUE)
    SINEW_CL_ERR(CL_INVALID_DEVICE) SINEW_CL_ERR(CL_INVALID_CONTEXT) SINEW_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    SINEW_CL_ERR(CL_INVALID_MEM_OBJECT) SINEW_CL_ERR(CL_INVALID_BINARY) SINEW_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    SINEW_CL_ERR(CL_INVALID_PROGRAM) SINEW_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE) SINEW_CL_ERR(CL_INVALID_KERNEL_NAME)
    SINEW_CL_ERR(CL_INVALID_KERNEL) SINEW_CL_ERR(CL_INVALID_ARG_INDEX) SINEW_CL_ERR(CL_INVALID_ARG_VALUE)
    SINEW_CL_ERR(CL_INVALID_ARG_SIZE) SINEW_CL_ERR(CL_INVALID_KERNEL_ARGS) SINEW_CL_ERR(CL_INVALID_WORK_DIMENSION)
    SINEW_CL_ERR(CL_INVALID_WORK_GROUP_SIZE) SINEW_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    SINEW_CL_ERR(CL_INVALID_GLOBAL_OFFSET) SINEW_CL_ERR(CL_INVALID_EVENT_WAIT_LIST) SINEW_CL_ERR(CL_INVALID_EVENT)
    SINEW_CL_ERR(CL_INVALID_OPERATION) SINEW_CL_ERR(CL_INVALID_BUFFER_SIZE) SINEW_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    SINEW_CL_ERR(CL_INVALID_PLATFORM) SINEW_CL_ERR(CL_INVALID_HOST_PTR)
    SINEW_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef SINEW_CL_ERR
    default: return "CL error";
  }
}

void check(cl_int e, const char* what, const std::string& where) {
  if (e == CL_SUCCESS) return;
  throw error("opencl: " + std::string(what) + " on " + where + " failed: " + cl_error_name(e) + " (" +
              std::to_string(e) + ")");
}

namespace {

/// A string property through the size-then-value protocol of clGet*Info.
template <class Get>
std::string info_str(Get get) {
  std::size_t n = 0;
  if (get(0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  get(n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}
std::string platform_str(cl_platform_id p, cl_platform_info what) {
  return info_str([&](std::size_t n, void* v, std::size_t* r) { return clGetPlatformInfo(p, what, n, v, r); });
}
std::string device_str(cl_device_id d, cl_device_info what) {
  return info_str([&](std::size_t n, void* v, std::size_t* r) { return clGetDeviceInfo(d, what, n, v, r); });
}
template <class T>
T device_val(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

/// "pocl", "nvidia", "amd", "intel", else the platform name's first word.
std::string short_name(const std::string& platform, const std::string& vendor) {
  std::string s = platform + " " + vendor;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (s.find("portable computing language") != std::string::npos || s.find("pocl") != std::string::npos)
    return "pocl";
  for (const char* known : {"nvidia", "amd", "intel", "arm", "apple", "rusticl", "clover"})
    if (s.find(known) != std::string::npos) return known;
  std::string w;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    w += c;
  }
  return w.empty() ? "cl" : w;
}

device_kind kind_of(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return device_kind::gpu;
  if (t & CL_DEVICE_TYPE_CPU) return device_kind::cpu;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return device_kind::accelerator;
  return device_kind::other;
}

std::vector<std::shared_ptr<device_state>> discover() {
  std::vector<std::shared_ptr<device_state>> out;
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  std::map<std::string, int> used;  // short names taken, to keep ids unique
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    std::string pname = platform_str(p, CL_PLATFORM_NAME);
    std::string sname = short_name(pname, platform_str(p, CL_PLATFORM_VENDOR));
    if (int k = used[sname]++) sname += std::to_string(k);
    for (cl_uint i = 0; i < nd; ++i) {
      auto st = std::make_shared<device_state>();
      device_info& d = st->info;
      d.id = sname + ":" + std::to_string(i);
      d.platform = pname;
      d.name = device_str(ds[i], CL_DEVICE_NAME);
      d.vendor = device_str(ds[i], CL_DEVICE_VENDOR);
      d.driver_version = device_str(ds[i], CL_DRIVER_VERSION);
      d.opencl_version = device_str(ds[i], CL_DEVICE_VERSION);
      d.kind = kind_of(device_val<cl_device_type>(ds[i], CL_DEVICE_TYPE));
      d.compute_units = device_val<cl_uint>(ds[i], CL_DEVICE_MAX_COMPUTE_UNITS);
      d.global_mem = std::size_t(device_val<cl_ulong>(ds[i], CL_DEVICE_GLOBAL_MEM_SIZE));
      d.max_alloc = std::size_t(device_val<cl_ulong>(ds[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE));
      d.local_mem = std::size_t(device_val<cl_ulong>(ds[i], CL_DEVICE_LOCAL_MEM_SIZE));
      d.max_work_group = device_val<std::size_t>(ds[i], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      d.host_unified_memory = device_val<cl_bool>(ds[i], CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
      st->platform = p;
      st->id = ds[i];
      out.push_back(std::move(st));
    }
  }
  return out;
}

}  // namespace

const std::vector<std::shared_ptr<device_state>>& all_devices() {
  static const auto* devs = new std::vector<std::shared_ptr<device_state>>(discover());  // immortal
  return *devs;
}

void device_state::open() {
  std::call_once(opened, [this] {
    // One context per platform, holding all its devices (buffers and
    // programs are per context; sharing it lets devices of a platform share them).
    static std::mutex m;
    static std::map<cl_platform_id, cl_context> contexts;
    std::lock_guard g(m);
    cl_context& c = contexts[platform];
    if (!c) {
      std::vector<cl_device_id> ids;
      for (auto& d : all_devices())
        if (d->platform == platform) ids.push_back(d->id);
      cl_context_properties props[] = {CL_CONTEXT_PLATFORM, cl_context_properties(platform), 0};
      cl_int e = CL_SUCCESS;
      c = clCreateContext(props, cl_uint(ids.size()), ids.data(), nullptr, nullptr, &e);
      check(e, "clCreateContext", info.platform);
    }
    ctx = c;
    for (auto& q : queues) {
      cl_int e = CL_SUCCESS;
      q = clCreateCommandQueue(ctx, id, CL_QUEUE_PROFILING_ENABLE, &e);
      check(e, "clCreateCommandQueue", label());
    }
    copy_space = std::make_unique<cl_space>(*this, false);
    // Device buffers of released units serve the next units of their size
    // (no allocation and free per unit, which NVIDIA's driver may synchronise).
    copy_space->set_reuse_limit(info.global_mem / 16);
    if (info.host_unified_memory) unified_space = std::make_unique<cl_space>(*this, true);
  });
  if (!ctx) throw error("opencl: device " + label() + " could not be opened earlier");
}

std::string cl_space::name() const { return d_.info.id + (unified_ ? " (mapped)" : ""); }

void* cl_space::allocate(void* host, std::size_t bytes) {
  cl_int e = CL_SUCCESS;
  cl_mem m = unified_ ? clCreateBuffer(d_.ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, std::max<std::size_t>(bytes, 1),
                                       host, &e)
                      : clCreateBuffer(d_.ctx, CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 1), nullptr, &e);
  check(e, "clCreateBuffer", d_.label());
  return m;
}

void cl_space::release(void* handle) noexcept { clReleaseMemObject(static_cast<cl_mem>(handle)); }

void cl_space::upload(void* handle, std::size_t offset, const void* src, std::size_t n) {
  check(clEnqueueWriteBuffer(d_.queues[0], static_cast<cl_mem>(handle), CL_TRUE, offset, n, src, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer", d_.label());
}

void cl_space::download(void* handle, std::size_t offset, void* dst, std::size_t n) {
  check(clEnqueueReadBuffer(d_.queues[0], static_cast<cl_mem>(handle), CL_TRUE, offset, n, dst, 0, nullptr, nullptr),
        "clEnqueueReadBuffer", d_.label());
}

namespace {
struct presynced_range {
  void* handle;
  std::size_t offset, n;
};
thread_local std::vector<presynced_range> tl_presynced;
}  // namespace

void cl_space::presynced(void* handle, std::size_t offset, std::size_t n) {
  tl_presynced.push_back({handle, offset, n});
}

void cl_space::forget_presynced() noexcept { tl_presynced.clear(); }

void cl_space::sync_to_host(void* handle, std::size_t offset, std::size_t n) {
  // With CL_MEM_USE_HOST_PTR the map returns the host pointer itself: no copy,
  // but it is what makes the device's writes visible to the host by the spec.
  if (!n) return;
  for (auto it = tl_presynced.begin(); it != tl_presynced.end(); ++it)
    if (it->handle == handle && it->offset == offset && it->n == n) {
      tl_presynced.erase(it);
      return;  // mapped and unmapped after the kernel already (presynced)
    }
  cl_int e = CL_SUCCESS;
  void* p = clEnqueueMapBuffer(d_.queues[0], static_cast<cl_mem>(handle), CL_TRUE, CL_MAP_READ, offset, n, 0, nullptr,
                               nullptr, &e);
  check(e, "clEnqueueMapBuffer", d_.label());
  cl_event ev = nullptr;
  check(clEnqueueUnmapMemObject(d_.queues[0], static_cast<cl_mem>(handle), p, 0, nullptr, &ev),
        "clEnqueueUnmapMemObject", d_.label());
  clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
}

}  // namespace detail

const char* to_string(device_kind k) {
  switch (k) {
    case device_kind::cpu: return "cpu";
    case device_kind::gpu: return "gpu";
    case device_kind::accelerator: return "accelerator";
    case device_kind::other: return "other";
  }
  return "other";
}

std::vector<device_info> list_devices() {
  std::vector<device_info> out;
  for (auto& d : detail::all_devices()) out.push_back(d->info);
  return out;
}

const device_info& device::info() const {
  if (!s_) throw error("opencl: empty device handle");
  return s_->info;
}

coherence::memory_space& device::memory(memory_mode m) const {
  if (!s_) throw error("opencl: empty device handle");
  s_->open();
  return s_->space(m);
}

std::string device::label() const { return s_ ? s_->label() : std::string("(no device)"); }

std::vector<device> select_devices(std::string_view what) {
  const auto& all = detail::all_devices();
  if (all.empty())
    throw error("opencl: no OpenCL platform or device is installed (asked for '" + std::string(what) +
                "'); install an ICD such as pocl-opencl-icd");
  std::vector<device> out;
  std::string_view rest = what;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    bool any = false;
    for (auto& d : all) {
      bool match = tok == "all" || tok == d->info.id || tok == to_string(d->info.kind);
      if (!match) continue;
      any = true;
      device h(d);
      if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
    }
    if (!any) {
      std::string have;
      for (auto& d : all) have += (have.empty() ? "" : ", ") + d->label() + " " + d->info.name;
      throw error("opencl: no device matches '" + std::string(tok) + "' (devices: " + have +
                  "; use cpu, gpu, accelerator, all or an id)");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  for (auto& d : out) d.state()->open();
  return out;
}

}  // namespace sinew::opencl
