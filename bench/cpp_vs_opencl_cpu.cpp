// cpp_vs_opencl_cpu: every workload of [Marques14, §5.1.1] as a C++ leaf (sinew::map over the
// graph's workers) against the same computation as an OpenCL kernel leaf
// (graphs/kernels/<k>.cl through sinew::opencl::kernel_leaf) on the first
// OpenCL CPU device (PoCL), on the same cores: what a user gives up or gains
// by writing the leaf in OpenCL C for a CPU ([Lee15]: OpenCL on CPUs).
//
// Workloads (full / --quick / --smoke sizes): saxpy (20M / 4M / 64k floats),
// series (2000 / 400 / 32 coefficients), segmentation (200^3 / 100^3 / 32^3),
// solarize and mirror (4096^2 / 1024^2 / 128^2 RGBA), gaussian noise
// (2048^2 / 1024^2 / 128^2), n-body (one step of 4096 / 2048 / 256 bodies),
// unbalanced (the kernel of [Vinas17, §4.2.2], 2048^2 / 512^2 / 64^2, half the rows
// non-zero). Both variants use memory the OpenCL device maps (PoCL shares
// host memory: no copies).
//
// Every run's output is spoiled before and checked after it: integer
// workloads bit-exact against the sequential reference; gaussian noise at
// most 1 level per channel (OpenCL's log/sqrt/cos); series 1e-12 relative
// (double pow/cos/sin); n-body 1e-4 relative (float sqrt and sums);
// unbalanced and saxpy 1e-6 relative (contraction into FMAs may differ).
//
// RATIO cpp_vs_opencl_cpu_<workload> = C++ leaf throughput / OpenCL leaf
// throughput (medians), target >= 1.0: the C++ leaf is not slower than the
// same kernel on PoCL.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "bench.hpp"
#include "source_tree.hpp"
#include "unbalanced.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
namespace cl = sinew::opencl;


cl::kernel_spec spec(const std::string& device, const char* file, const char* kernel, std::vector<cl::arg::spec> args) {
  cl::kernel_spec s;
  s.file = sinew_support::kernel_file(file);
  s.kernel = kernel;
  s.args = std::move(args);
  s.devices = device;
  s.memory = cl::memory_mode::automatic;
  return s;
}

/// One workload: the two runs on shared output, how to spoil and check it.
struct pair_case {
  std::string label;  ///< table rows "<label> c++ leaf" / "<label> opencl leaf"
  std::string key;    ///< RATIO cpp_vs_opencl_cpu_<key>
  std::string unit;
  std::function<double(double)> to_metric;
  std::function<void()> poison;
  std::function<std::string()> check_cpp, check_cl;
  std::function<void()> cpp, ocl;
};

void measure(sb::context& ctx, const pair_case& c, const std::string& device_name) {
  auto one = [&](const char* what, const std::function<void()>& run, const std::function<std::string()>& check,
                 const std::string& note) -> const sb::series& {
    return ctx.measure({.name = c.label + " " + what,
                        .unit = c.unit,
                        .better = sb::higher,
                        .setup = c.poison,
                        .run = run,
                        .to_metric = c.to_metric,
                        .check = check,
                        .note = note});
  };
  const auto& a = one("c++ leaf", c.cpp, c.check_cpp, "sinew::map, graph's workers");
  const auto& b = one("opencl leaf", c.ocl, c.check_cl, "kernel_leaf on " + device_name);
  if (a.stats.n && b.stats.n && b.stats.median > 0)
    ctx.ratio("cpp_vs_opencl_cpu_" + c.key, a.stats.median / b.stats.median, 1.0, sb::higher,
              "C++ leaf / OpenCL leaf on the CPU device (" + c.unit + ", medians)");
}

/// "" when every element is within `rel` (relative) of the reference.
template <class Got, class Want, class Fn>
std::string compare(const Got& got, const Want& want, std::size_t n, const char* what, double rel, Fn&& fields) {
  for (std::size_t i = 0; i < n; ++i) {
    std::string bad = fields(got[i], want[i], rel);
    if (!bad.empty()) return std::string(what) + ": element " + std::to_string(i) + " " + bad;
  }
  return {};
}

std::string near(double x, double y, double rel) {
  if (rel == 0 ? x == y : std::fabs(x - y) <= rel * std::fabs(y) + 1e-30) return {};
  return "is " + std::to_string(x) + ", expected " + std::to_string(y);
}

// ------------------------------------------------------------- workloads

void saxpy_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t n) {
  const float a = 2.5f;
  wl::saxpy_inputs in = wl::make_saxpy_inputs(n, 3);
  const std::vector<float> ref = wl::saxpy_reference(a, in.x, in.y);
  std::vector<float> z(n);
  sinew::graph cpp(sinew::map<wl::saxpy>({a}));
  sinew::graph ocl(cl::kernel_leaf(spec(dev, "saxpy.cl", "saxpy",
                                        {cl::arg::input<float>(), cl::arg::input<float>(), cl::arg::output<float>(),
                                         cl::arg::scalar(a), cl::arg::count()})));
  auto check = [&]() {
    return compare(z, ref, n, "saxpy", 1e-6, [](float x, float y, double r) { return near(x, y, r); });
  };
  measure(ctx,
          {.label = "saxpy " + std::to_string(n),
           .key = "saxpy",
           .unit = "GB/s",
           .to_metric = [n](double s) { return 12.0 * double(n) / s / 1e9; },
           .poison = [&] { std::fill(z.begin(), z.end(), -7.0f); },
           .check_cpp = check,
           .check_cl = check,
           .cpp = [&] { cpp.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); },
           .ocl = [&] { ocl.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); }},
          dev_name);
}

void series_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t n) {
  const std::vector<wl::coeff> ref = wl::series_reference(n);
  std::vector<std::vector<wl::coeff>> out;
  sinew::graph cpp(wl::series_node());
  sinew::graph ocl(cl::kernel_leaf(
      spec(dev, "series.cl", "series", {cl::arg::output<wl::coeff>(), cl::arg::scalar<int>(1000), cl::arg::count()})));
  auto check = [&](double rel) {
    return [&, rel]() -> std::string {
      if (out.size() != 1 || out[0].size() != n) return "series: no result";
      return compare(out[0], ref, n, "series", rel, [](const wl::coeff& x, const wl::coeff& y, double r) {
        std::string e = near(x.a, y.a, r);
        return e.empty() ? near(x.b, y.b, r) : "a " + e;
      });
    };
  };
  measure(ctx,
          {.label = "series " + std::to_string(n),
           .key = "series",
           .unit = "coeff/s",
           .to_metric = [n](double s) { return double(n) / s; },
           .poison = [&] { out.clear(); },
           .check_cpp = check(0),
           .check_cl = check(1e-12),
           .cpp = [&] { cpp.run(wl::series_source(n), sinew::into(out)).get(); },
           .ocl = [&] { ocl.run(wl::series_source(n), sinew::into(out)).get(); }},
          dev_name);
}

void segmentation_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t side) {
  const std::uint8_t lo = 85, hi = 170;
  sinew::array<std::uint8_t, 3> vol = wl::make_volume(side, side, side, 5);
  const sinew::array<std::uint8_t, 3> ref = wl::segmentation_reference(vol, lo, hi);
  sinew::array<std::uint8_t, 3> out(vol.shape());
  const std::size_t n = vol.size();
  sinew::graph cpp(sinew::map<wl::segmentation>({lo, hi}));
  sinew::graph ocl(cl::kernel_leaf(spec(dev, "segmentation.cl", "segmentation",
                                        {cl::arg::input<std::uint8_t>(), cl::arg::output<std::uint8_t>(),
                                         cl::arg::scalar(lo), cl::arg::scalar(hi), cl::arg::cols(), cl::arg::rows()})));
  auto check = [&]() {
    return compare(out, ref, n, "segmentation", 0, [](std::uint8_t x, std::uint8_t y, double r) { return near(x, y, r); });
  };
  measure(ctx,
          {.label = "segmentation " + std::to_string(side) + "^3",
           .key = "segmentation",
           .unit = "Mvoxel/s",
           .to_metric = [n](double s) { return double(n) / s / 1e6; },
           .poison = [&] { std::fill(out.begin(), out.end(), std::uint8_t(77)); },
           .check_cpp = check,
           .check_cl = check,
           .cpp = [&] { cpp.run(sinew::from_arrays(vol), sinew::into_arrays(out)).get(); },
           .ocl = [&] { ocl.run(sinew::from_arrays(vol), sinew::into_arrays(out)).get(); }},
          dev_name);
}

std::string pixel_diff(const wl::rgba8& x, const wl::rgba8& y, double levels) {
  auto d = [](std::uint8_t a, std::uint8_t b) { return std::abs(int(a) - int(b)); };
  if (d(x.r, y.r) <= levels && d(x.g, y.g) <= levels && d(x.b, y.b) <= levels && x.a == y.a) return {};
  return "is (" + std::to_string(x.r) + "," + std::to_string(x.g) + "," + std::to_string(x.b) + "," +
         std::to_string(x.a) + "), expected (" + std::to_string(y.r) + "," + std::to_string(y.g) + "," +
         std::to_string(y.b) + "," + std::to_string(y.a) + ")";
}

/// solarize, gaussian noise, mirror: RGBA image in, RGBA image out.
template <class Leaf>
void image_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t side,
                const char* what, const char* file, const char* kernel, Leaf leaf, std::vector<cl::arg::spec> scalars,
                const sinew::array<wl::rgba8, 2>& img, const sinew::array<wl::rgba8, 2>& ref, double cl_levels) {
  sinew::array<wl::rgba8, 2> in = img, out(img.shape());
  const std::size_t n = img.size();
  std::vector<cl::arg::spec> args = {cl::arg::input<wl::rgba8>(), cl::arg::output<wl::rgba8>()};
  for (auto& s : scalars) args.push_back(s);
  args.push_back(cl::arg::cols());
  args.push_back(cl::arg::rows());
  sinew::graph cpp(sinew::map<Leaf>(leaf));
  sinew::graph ocl(cl::kernel_leaf(spec(dev, file, kernel, std::move(args))));
  auto check = [&](double levels) {
    return [&, levels]() { return compare(out, ref, n, what, levels, pixel_diff); };
  };
  measure(ctx,
          {.label = std::string(what) + " " + std::to_string(side) + "^2",
           .key = what,
           .unit = "Mpixel/s",
           .to_metric = [n](double s) { return double(n) / s / 1e6; },
           .poison = [&] { std::fill(out.begin(), out.end(), wl::rgba8{1, 2, 3, 4}); },
           .check_cpp = check(0),
           .check_cl = check(cl_levels),
           .cpp = [&] { cpp.run(sinew::from_arrays(in), sinew::into_arrays(out)).get(); },
           .ocl = [&] { ocl.run(sinew::from_arrays(in), sinew::into_arrays(out)).get(); }},
          dev_name);
}

void nbody_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t n) {
  const wl::nbody_step step{};
  wl::nbody_state in = wl::make_bodies(n, 21);
  const wl::nbody_state ref = wl::nbody_reference(in, 1, step);
  std::vector<wl::body> pos(n);
  std::vector<wl::vel> vel(n);
  sinew::graph cpp(sinew::map<wl::nbody_step>(step));
  cl::kernel_spec k = spec(dev, "nbody.cl", "nbody",
                           {cl::arg::input<wl::body>().read_whole(), cl::arg::input<wl::vel>(),
                            cl::arg::output<wl::body>(), cl::arg::output<wl::vel>(), cl::arg::scalar(step.eps2),
                            cl::arg::scalar(step.dt), cl::arg::count()});
  k.options = "-cl-fp32-correctly-rounded-divide-sqrt";
  sinew::graph ocl(cl::kernel_leaf(k));
  auto check = [&](double rel) {
    return [&, rel]() -> std::string {
      std::string e = compare(pos, ref.positions, n, "n-body position", rel, [](const wl::body& x, const wl::body& y, double r) {
        std::string s = near(x.x, y.x, r);
        if (s.empty()) s = near(x.y, y.y, r);
        if (s.empty()) s = near(x.z, y.z, r);
        return s.empty() ? near(x.m, y.m, 0) : s;
      });
      if (!e.empty()) return e;
      // Velocities change by a small acceleration: compare with an absolute floor.
      return compare(vel, ref.velocities, n, "n-body velocity", rel, [](const wl::vel& x, const wl::vel& y, double r) {
        auto ok = [r](float a, float b) { return r == 0 ? a == b : std::fabs(a - b) <= r * std::fabs(b) + 1e-5; };
        if (ok(x.x, y.x) && ok(x.y, y.y) && ok(x.z, y.z)) return std::string();
        return "is (" + std::to_string(x.x) + "," + std::to_string(x.y) + "," + std::to_string(x.z) + "), expected (" +
               std::to_string(y.x) + "," + std::to_string(y.y) + "," + std::to_string(y.z) + ")";
      });
    };
  };
  measure(ctx,
          {.label = "n-body " + std::to_string(n),
           .key = "nbody",
           .unit = "Minteractions/s",
           .to_metric = [n](double s) { return double(n) * double(n) / s / 1e6; },
           .poison = [&] {
             std::fill(pos.begin(), pos.end(), wl::body{-1, -1, -1, -1});
             std::fill(vel.begin(), vel.end(), wl::vel{-1, -1, -1, -1});
           },
           .check_cpp = check(0),
           .check_cl = check(1e-4),
           .cpp = [&] { cpp.run(sinew::from_arrays(in.positions, in.velocities), sinew::into_arrays(pos, vel)).get(); },
           .ocl = [&] { ocl.run(sinew::from_arrays(in.positions, in.velocities), sinew::into_arrays(pos, vel)).get(); }},
          dev_name);
}

void unbalanced_case(sb::context& ctx, const std::string& dev, const std::string& dev_name, std::size_t side) {
  sinew::array<float, 2> m(sinew::shape::d2(side, side)), out(m.shape()), ref(m.shape());
  sb::fill_unbalanced(m, 0.5);
  const sb::unbalanced f;
  for (std::size_t i = 0; i < m.size(); ++i) f(m[i], &ref[i]);
  const std::size_t n = m.size();
  sinew::graph cpp(sinew::map<sb::unbalanced>());
  sinew::graph ocl(cl::kernel_leaf(spec(dev, "unbalanced.cl", "unbalanced",
                                        {cl::arg::input<float>(), cl::arg::output<float>(), cl::arg::cols(),
                                         cl::arg::rows()})));
  auto check = [&]() {
    return compare(out, ref, n, "unbalanced", 1e-6, [](float x, float y, double r) { return near(x, y, r); });
  };
  measure(ctx,
          {.label = "unbalanced " + std::to_string(side) + "^2 50%",
           .key = "unbalanced",
           .unit = "Melem/s",
           .to_metric = [n](double s) { return double(n) / s / 1e6; },
           .poison = [&] { std::fill(out.data(), out.data() + n, -1.0f); },
           .check_cpp = check,
           .check_cl = check,
           .cpp = [&] { cpp.run(sinew::from_arrays(m), sinew::into_arrays(out)).get(); },
           .ocl = [&] { ocl.run(sinew::from_arrays(m), sinew::into_arrays(out)).get(); }},
          dev_name);
}

void run(sb::context& ctx) {
  std::string dev, dev_name;
  for (auto& d : cl::list_devices())
    if (d.kind == cl::device_kind::cpu) {
      dev = d.id;
      dev_name = d.id + " " + d.name;
      break;
    }
  if (dev.empty()) {
    ctx.note("no OpenCL CPU device: skipped");
    return;
  }
  ctx.param("device", dev_name);
  ctx.param("threads", sb::thread_count());
  const bool smoke = ctx.smoke(), quick = ctx.quick();
  auto pick = [&](std::size_t full, std::size_t q, std::size_t s) { return smoke ? s : quick ? q : full; };
  const std::size_t saxpy_n = pick(20'000'000, 4'000'000, 65'536), series_n = pick(2000, 400, 32),
                    seg = pick(200, 100, 32), img = pick(4096, 1024, 128), noise = pick(2048, 1024, 128),
                    bodies = pick(4096, 2048, 256), unb = pick(2048, 512, 64);
  ctx.param("sizes", "saxpy " + std::to_string(saxpy_n) + ", series " + std::to_string(series_n) + ", segmentation " +
                         std::to_string(seg) + "^3, solarize/mirror " + std::to_string(img) + "^2, noise " +
                         std::to_string(noise) + "^2, n-body " + std::to_string(bodies) + ", unbalanced " +
                         std::to_string(unb) + "^2");

  saxpy_case(ctx, dev, dev_name, saxpy_n);
  series_case(ctx, dev, dev_name, series_n);
  segmentation_case(ctx, dev, dev_name, seg);
  {
    const std::uint8_t t = 128;
    auto im = wl::make_image(img, img, 4);
    image_case(ctx, dev, dev_name, img, "solarize", "solarize.cl", "solarize", wl::solarize{t},
               {cl::arg::scalar<std::uint8_t>(t)}, im, wl::solarize_reference(im, t), 0);
    image_case(ctx, dev, dev_name, img, "mirror", "mirror.cl", "mirror", wl::mirror{}, {}, im,
               wl::mirror_reference(im), 0);
  }
  {
    const std::uint64_t seed = 9;
    const float sigma = 16.0f;
    auto im = wl::make_image(noise, noise, 5);
    image_case(ctx, dev, dev_name, noise, "gaussian_noise", "gaussian_noise.cl", "gaussian_noise",
               wl::gaussian_noise{seed, sigma}, {cl::arg::scalar<std::uint64_t>(seed), cl::arg::scalar(sigma)}, im,
               wl::gaussian_noise_reference(im, seed, sigma), 1);
  }
  nbody_case(ctx, dev, dev_name, bodies);
  unbalanced_case(ctx, dev, dev_name, unb);
}

const sb::registrar reg("cpp_vs_opencl_cpu",
                        "every seed workload (saxpy, series, segmentation, solarize, mirror, gaussian noise, n-body, "
                        "unbalanced) as a C++ leaf vs the same kernel as an OpenCL leaf on the CPU device (PoCL)",
                        run);

}  // namespace
