#pragma once
/// \file opencl/kernel.hpp
/// OpenCL kernel leaves: a node usable wherever a `sinew::map<F>` is
/// (pipeline stage, farm worker, loop body), built at run time from a
/// `kernel_spec` (the JSON loader builds one from a file). After Marrow's
/// KernelWrapper [Marques14, §3–4.1], each kernel parameter is one of:
///
///  * **buffers** bound from the unit's layers: `arg::input` (layer 0, in
///    order), `arg::output` (layer 1, in order), `arg::inout` (layer 0,
///    updated in place; a leaf is either in place or writes outputs);
///  * **constants** fixed at build time: `arg::scalar(v)`, or `-D` defines;
///  * **per-run scalars** (`uint`): `arg::count()` (elements of the unit),
///    `arg::rows()`, `arg::cols()`, `arg::planes()`, and `arg::seq()` (`ulong`,
///    the unit's sequence number);
///  * **local memory**: `arg::local(bytes per work-group)` or
///    `arg::local_per_item(bytes)` (times the work-group size).
///
/// The global range is the unit's shape, innermost dimension first as in
/// OpenCL: `get_global_id(0)` is the column (element in 1-D),
/// `get_global_id(1)` the row, `get_global_id(2)` the plane. Work-groups:
/// `local` if given; else the driver's choice on CPUs ([Lee15]: let
/// the CPU runtime pick large groups) and 64 / 16x16 / 8x8x4 on other
/// devices. The global range is rounded up to whole work-groups, so kernels
/// must guard (`if (i >= n) return;`). A device executor computes a share of
/// outermost indices with a global offset: kernels use absolute ids.
///
/// \code
/// namespace cl = sinew::opencl;
/// sinew::node k = cl::kernel_leaf({.file = "graphs/kernels/saxpy.cl", .kernel = "saxpy",
///     .args = {cl::arg::input<float>(), cl::arg::input<float>(), cl::arg::output<float>(),
///              cl::arg::scalar(2.0f), cl::arg::count()},
///     .devices = "cpu"});
/// std::vector<float> x(n, 1), y(n, 2), z(n);
/// sinew::graph g(k);
/// g.run(sinew::from_arrays(x, y), sinew::into_arrays(z)).get();   // z[i] == 4
/// \endcode
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sinew/opencl/device_executor.hpp>
#include <sinew/engine/elem_type.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/opencl/platform.hpp>

namespace sinew::opencl {

namespace arg {

enum class kind { input, output, inout, scalar, count, rows, cols, planes, seq, local, local_per_item };

/// One kernel parameter (see the file comment for the kinds).
struct spec {
  arg::kind kind = arg::kind::scalar;
  const elem_type* type = nullptr;   ///< buffers: element type
  std::vector<unsigned char> value;  ///< scalar: its bytes
  std::size_t bytes = 0;             ///< local memory size
  /// Inputs of a share (multi-device split): outermost indices read beyond
  /// the share on each side (stencils), or the whole buffer (n-body).
  std::size_t halo = 0;
  bool whole = false;

  /// This input is read entirely by every share.
  spec& read_whole() { whole = true; return *this; }
  /// This input is read `rows` outermost indices beyond each share's ends.
  spec& with_halo(std::size_t rows) { halo = rows; return *this; }
};

inline spec make(kind k, const elem_type* t = nullptr) {
  spec s;
  s.kind = k;
  s.type = t;
  return s;
}
template <class T>
spec input() { return make(kind::input, &elem_type_of<T>()); }
template <class T>
spec output() { return make(kind::output, &elem_type_of<T>()); }
template <class T>
spec inout() { return make(kind::inout, &elem_type_of<T>()); }
inline spec input(const elem_type& t) { return make(kind::input, &t); }
inline spec output(const elem_type& t) { return make(kind::output, &t); }
inline spec inout(const elem_type& t) { return make(kind::inout, &t); }

/// A constant scalar argument (its exact bytes: `2.0f` is a `float`).
template <class T>
spec scalar(T v) {
  static_assert(std::is_trivially_copyable_v<T>, "scalar arguments must be trivially copyable");
  spec s = make(kind::scalar);
  s.value.resize(sizeof(T));
  std::memcpy(s.value.data(), &v, sizeof(T));
  return s;
}
/// A constant scalar given by its bytes (JSON loader: type by name).
inline spec scalar_bytes(const void* p, std::size_t n) {
  spec s = make(kind::scalar);
  s.value.assign(static_cast<const unsigned char*>(p), static_cast<const unsigned char*>(p) + n);
  return s;
}
inline spec count() { return make(kind::count); }
inline spec rows() { return make(kind::rows); }
inline spec cols() { return make(kind::cols); }
inline spec planes() { return make(kind::planes); }
inline spec seq() { return make(kind::seq); }
inline spec local(std::size_t bytes_per_group) { spec s = make(kind::local); s.bytes = bytes_per_group; return s; }
inline spec local_per_item(std::size_t bytes) { spec s = make(kind::local_per_item); s.bytes = bytes; return s; }

}  // namespace arg

struct kernel_spec {
  std::string file;    ///< .cl file (read when the leaf is built)
  std::string source;  ///< or the source itself (then `file` only names it in errors)
  std::string kernel;  ///< kernel function name
  std::vector<arg::spec> args;
  std::string devices = "all";  ///< select_devices() string; the leaf runs on the first match
  std::vector<std::pair<std::string, std::string>> defines;  ///< -D name=value
  std::string options;                                       ///< more build options
  std::array<std::size_t, 3> local{0, 0, 0};  ///< work-group size, OpenCL order; 0 = default
  memory_mode memory = memory_mode::automatic;
  /// Leave outputs in device memory only (the next stage is a kernel on the
  /// same device); see `device_pipeline`, which sets it safely.
  bool keep_on_device = false;
  /// Overlap ([Marques14]'s "overlap", [Takizawa15]): with device copies, cut
  /// each unit (or share) into this many chunks along the outermost
  /// dimension whose upload, kernel and download are chained by events and
  /// alternate between the device's two queues, so one chunk's transfers
  /// run while another computes. 1 = off. Inputs read whole or with a halo
  /// are uploaded before the first chunk.
  unsigned chunks = 1;
};

/// A leaf node running `s.kernel` on the first device `s.devices` selects.
/// Reads and builds the program at once (cached), so a bad file, a build
/// error or an unknown kernel name throws `sinew::error` here.
node kernel_leaf(kernel_spec s);

/// Kernels in a row on one device: every kernel but the last keeps its
/// outputs on the device, so nothing returns to the host in between.
///
/// \code
/// sinew::node p = sinew::opencl::device_pipeline({noise_spec, solarize_spec, mirror_spec});
/// \endcode
node device_pipeline(std::vector<kernel_spec> stages);

/// One device executor per device `s.devices` selects, for multi-device maps.
///
/// \code
/// auto execs = sinew::opencl::kernel_executors(spec);   // e.g. "pocl:0 (cpu)", "nvidia:0 (gpu)"
/// sinew::share_timing t = execs[0]->execute({0, rows / 2}, args);
/// \endcode
std::vector<std::shared_ptr<device_executor>> kernel_executors(const kernel_spec& s);

}  // namespace sinew::opencl
