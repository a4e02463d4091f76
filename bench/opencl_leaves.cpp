// opencl_leaves: kernel leaves (include/sinew/opencl/kernel.hpp) against the
// C++ leaf, and what the coherence layer saves:
//  * saxpy over one large unit: map<saxpy> on the host vs the saxpy.cl kernel
//    with mapped host memory, with device copies, and with copies cut into 4
//    chunks pipelined over the device's two queues (overlap);
//  * the image pipeline (noise -> solarize -> mirror) as kernels with device
//    copies: device_pipeline (intermediates stay on the device) vs three
//    separate kernel stages (each result goes back to the host).
// Runs on the first GPU if there is one, else the first device; skipped
// without an OpenCL device.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "bench.hpp"
#include "source_tree.hpp"

namespace {

namespace sb = sinew_bench;
namespace cl = sinew::opencl;
namespace wl = sinew::workloads;

std::string pick_device() {
  for (auto& d : cl::list_devices())
    if (d.kind == cl::device_kind::gpu) return d.id;
  return cl::list_devices().front().id;
}

cl::kernel_spec image_kernel(const char* file, const char* kernel, std::vector<cl::arg::spec> scalars,
                             const std::string& dev) {
  cl::kernel_spec s;
  s.file = sinew_support::kernel_file(file);
  s.kernel = kernel;
  s.args = {cl::arg::input<wl::rgba8>(), cl::arg::output<wl::rgba8>()};
  for (auto& x : scalars) s.args.push_back(x);
  s.args.push_back(cl::arg::cols());
  s.args.push_back(cl::arg::rows());
  s.devices = dev;
  s.memory = cl::memory_mode::copy;
  return s;
}

void run(sb::context& ctx) {
  if (cl::list_devices().empty()) {
    ctx.note("no OpenCL device: skipped");
    return;
  }
  const std::string dev = pick_device();
  ctx.param("device", dev + " " + cl::select_devices(dev).front().info().name);

  // --- saxpy ---
  const std::size_t n = ctx.quick() ? 2'000'000 : 20'000'000;
  ctx.param("saxpy_elements", n);
  auto in = wl::make_saxpy_inputs(n, 1);
  std::vector<float> z(n);
  auto gbs = [n](double s) { return 12.0 * double(n) / s / 1e9; };
  auto check = [&]() -> std::string {
    for (std::size_t i = 0; i < n; i += n / 1000 + 1)
      if (std::fabs(z[i] - (2.0f * in.x[i] + in.y[i])) > 1e-5f) return "saxpy: wrong z[" + std::to_string(i) + "]";
    return "";
  };
  auto reset = [&] { std::fill(z.begin(), z.end(), -1.0f); };
  auto saxpy_kernel = [&](cl::memory_mode m, unsigned chunks) {
    cl::kernel_spec s;
    s.file = sinew_support::kernel_file("saxpy.cl");
    s.kernel = "saxpy";
    s.args = {cl::arg::input<float>(), cl::arg::input<float>(), cl::arg::output<float>(), cl::arg::scalar(2.0f),
              cl::arg::count()};
    s.devices = dev;
    s.memory = m;
    s.chunks = chunks;
    return std::make_shared<sinew::graph>(cl::kernel_leaf(s));
  };
  sinew::graph host(sinew::map(wl::saxpy{2.0f}));
  auto mapped = saxpy_kernel(cl::memory_mode::automatic, 1);
  auto copied = saxpy_kernel(cl::memory_mode::copy, 1);
  auto chunked = saxpy_kernel(cl::memory_mode::copy, 4);
  auto run_on = [&](sinew::graph& g) { g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); };
  ctx.measure({.name = "map<saxpy> (host)", .unit = "GB/s", .better = sb::higher, .setup = reset,
               .run = [&] { run_on(host); }, .to_metric = gbs, .check = check, .note = ""});
  ctx.measure({.name = "opencl saxpy, mapped", .unit = "GB/s", .better = sb::higher, .setup = reset,
               .run = [&] { run_on(*mapped); }, .to_metric = gbs, .check = check,
               .note = "copies where the device lacks unified memory"});
  auto& c1 = ctx.measure({.name = "opencl saxpy, copies", .unit = "GB/s", .better = sb::higher, .setup = reset,
                          .run = [&] { run_on(*copied); }, .to_metric = gbs, .check = check, .note = ""});
  auto& c4 = ctx.measure({.name = "opencl saxpy, copies, 4 chunks", .unit = "GB/s", .better = sb::higher,
                          .setup = reset, .run = [&] { run_on(*chunked); }, .to_metric = gbs, .check = check,
                          .note = "upload/kernel/download overlapped"});
  if (c1.stats.n && c4.stats.n)
    ctx.ratio("opencl_overlap_speedup", c4.stats.median / c1.stats.median, 1.0, sb::higher,
              "4 chunks over two queues vs one unchunked launch, device copies");

  // --- image pipeline ---
  const std::size_t side = ctx.quick() ? 512 : 1024, images = 8;
  ctx.param("images", std::to_string(images) + " x " + std::to_string(side) + "^2");
  std::vector<sinew::array<wl::rgba8, 2>> imgs, out;
  for (std::size_t i = 0; i < images; ++i) imgs.push_back(wl::make_image(side, side, i));
  std::vector<cl::kernel_spec> st = {
      image_kernel("gaussian_noise.cl", "gaussian_noise", {cl::arg::scalar<std::uint64_t>(1), cl::arg::scalar(8.0f)}, dev),
      image_kernel("solarize.cl", "solarize", {cl::arg::scalar<std::uint8_t>(128)}, dev),
      image_kernel("mirror.cl", "mirror", {}, dev)};
  sinew::graph on_device(cl::device_pipeline(st));
  sinew::graph via_host(sinew::pipeline(cl::kernel_leaf(st[0]), cl::kernel_leaf(st[1]), cl::kernel_leaf(st[2])));
  auto mpix = [&](double s) { return double(images * side * side) / s / 1e6; };
  std::vector<sinew::array<wl::rgba8, 2>> first;
  auto same = [&]() -> std::string {
    if (first.empty()) first = out;
    for (std::size_t k = 0; k < images; ++k)
      for (std::size_t i = 0; i < side * side; i += 997)
        if (!(out.at(k)[i] == first[k][i])) return "image pipeline: results differ between variants";
    return "";
  };
  auto& d = ctx.measure({.name = "device_pipeline (copies)", .unit = "Mpixel/s", .better = sb::higher,
                         .setup = nullptr, .run = [&] { on_device.run(imgs, out).get(); }, .to_metric = mpix,
                         .check = same, .note = "intermediates stay on the device"});
  auto& h = ctx.measure({.name = "3 kernel stages (copies)", .unit = "Mpixel/s", .better = sb::higher,
                         .setup = nullptr, .run = [&] { via_host.run(imgs, out).get(); }, .to_metric = mpix,
                         .check = same, .note = "every stage downloads and uploads"});
  if (d.stats.n && h.stats.n)
    ctx.ratio("opencl_device_pipeline_speedup", d.stats.median / h.stats.median, 1.0, sb::higher,
              "kernels chained on the device vs results back to the host between stages");
}

const sb::registrar reg("opencl_leaves", "OpenCL kernel leaves: mapped vs copies vs overlap; device_pipeline", run);

}  // namespace
