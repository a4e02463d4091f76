// workloads: the data-parallel workloads of the benchmark suite of
// [Marques14, §5.1.1] (Saxpy, Series, Segmentation, Solarize) as one Sinew
// map over one unit, against what a user would otherwise write:
//
//   sinew map            sinew::map<Leaf> from include/sinew/workloads (C++ leaf)
//   tbb::parallel_for    the same loop body, default (auto) partitioner
//   sinew opencl leaf    sinew::opencl::kernel_leaf over graphs/kernels/<k>.cl (first CPU device: PoCL)
//   ..., steal           the same graph on the `steal` scheduler, whose idle workers park
//                        (docs/performance.md, "The OpenCL leaf on PoCL")
//   opencl direct        the same .cl kernel launched straight through the OpenCL C++ bindings
//                        (CL_MEM_USE_HOST_PTR buffers, one NDRange, map the output, finish)
//   sinew opencl leaf, gpu / opencl direct, gpu
//                        benchmark workloads_gpu: the same two on the first GPU, when there is one:
//                        the direct launch writes the inputs into device buffers (allocated once per
//                        host array), runs the NDRange and reads the output back, as hand-written
//                        GPU code does
//   openmp parallel for  the same loop body, schedule(static) (last: idle OpenMP threads spin a while)
//
// Every variant writes the same output array, which is spoiled before each
// run and compared with the sequential reference of include/sinew/workloads
// after it (bit-exact, except Saxpy under -march=native contraction and
// Series' double-precision OpenCL maths, which get a relative tolerance).
// Inputs come from the workloads' deterministic generators (never zero).
//
// RATIO lines (medians of the throughput metrics):
//   wl_<case>_vs_tbb        sinew map / tbb::parallel_for    target >= 0.95
//   wl_<case>_vs_omp        sinew map / openmp               target >= 0.9 (issue 21's target against OpenMP)
//   wl_<case>_cl_vs_direct  sinew opencl leaf / direct       target >= 0.95
//   wl_<case>_cl_steal_vs_direct  the same, the leaf on steal  target >= 0.95
//   wl_<case>_gpu_vs_direct the leaf / direct, both on the GPU (workloads_gpu)  target >= 0.95
//   wl_saxpy_<n>_vs_triad   sinew map GB/s / STREAM triad GB/s (triad.hpp)  target >= 0.85

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include "group_opencl.hpp"  // CL/opencl.hpp as the library configures it
#include <sinew/opencl/kernel.hpp>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#if defined(SINEW_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

#include "bench.hpp"
#include "triad.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
namespace scl = sinew::opencl;

// ---------------------------------------------------------------- direct OpenCL

/// The first OpenCL device of a type (CPU or GPU), a context and an
/// in-order queue on it, and kernels built from graphs/kernels/*.cl: what a
/// user launching these kernels by hand would set up once.
struct direct_cl {
  cl::Device device;
  cl::Context context;
  cl::CommandQueue queue;
  std::string dir;
  bool gpu = false;

  /// nullopt and the reason when there is no OpenCL device of `type`.
  static std::optional<direct_cl> open(cl_device_type type, std::string& why) {
    std::vector<cl::Platform> platforms;
    try {
      cl::Platform::get(&platforms);
      for (auto& p : platforms) {
        std::vector<cl::Device> devs;
        try {
          p.getDevices(type, &devs);
        } catch (const cl::Error&) {
          continue;  // CL_DEVICE_NOT_FOUND on this platform
        }
        if (devs.empty()) continue;
        direct_cl d;
        d.device = devs[0];
        d.context = cl::Context(d.device);
        d.queue = cl::CommandQueue(d.context, d.device);
        d.dir = sinew_support::kernel_dir();
        d.gpu = type == CL_DEVICE_TYPE_GPU;
        return d;
      }
      why = type == CL_DEVICE_TYPE_GPU ? "no OpenCL GPU" : "no OpenCL CPU device";
    } catch (const cl::Error& e) {
      why = std::string("no OpenCL platform (") + e.what() + " " + std::to_string(e.err()) + ")";
    }
    return std::nullopt;
  }

  std::string name() const { return device.getInfo<CL_DEVICE_NAME>(); }

  cl::Kernel kernel(const std::string& file, const std::string& name) {
    return cl::Kernel(sinew_support::build_program(context, device, dir + "/" + file), name.c_str());
  }

  /// "cpu" or "gpu": the leaf's select_devices() string for this device.
  const char* kind() const { return gpu ? "gpu" : "cpu"; }

  /// n elements at `p` that the kernel reads: the host memory itself on a
  /// CPU device (zero copy), else the device buffer of `p`, written from it.
  template <class T>
  cl::Buffer in(const T* p, std::size_t n) {
    if (!gpu) return cl::Buffer(context, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, n * sizeof(T), const_cast<T*>(p));
    cl::Buffer b = on_device(p, n * sizeof(T), CL_MEM_READ_ONLY);
    queue.enqueueWriteBuffer(b, CL_FALSE, 0, n * sizeof(T), p);
    return b;
  }

  /// n elements at `p` that the kernel writes (launch() brings them back).
  template <class T>
  cl::Buffer out(T* p, std::size_t n) {
    if (!gpu) return cl::Buffer(context, CL_MEM_WRITE_ONLY | CL_MEM_USE_HOST_PTR, n * sizeof(T), p);
    return on_device(p, n * sizeof(T), CL_MEM_WRITE_ONLY);
  }

  /// Enqueues `k` over `global`, makes `o` (`bytes`, whose host memory is
  /// `host`) visible to the host, waits.
  void launch(cl::Kernel& k, const cl::NDRange& global, cl::Buffer& o, void* host, std::size_t bytes) {
    queue.enqueueNDRangeKernel(k, cl::NullRange, global, cl::NullRange);
    if (gpu) {
      queue.enqueueReadBuffer(o, CL_TRUE, 0, bytes, host);  // in order: after the kernel
    } else {
      void* p = queue.enqueueMapBuffer(o, CL_TRUE, CL_MAP_READ, 0, bytes);
      queue.enqueueUnmapMemObject(o, p);
    }
    queue.finish();
  }

 private:
  /// Device buffers of a GPU, one per host array (a program reuses them).
  std::map<std::pair<const void*, std::size_t>, cl::Buffer> device_buffers;

  cl::Buffer on_device(const void* host, std::size_t bytes, cl_mem_flags access) {
    auto [it, fresh] = device_buffers.try_emplace({host, bytes});
    if (fresh) it->second = cl::Buffer(context, access, bytes);
    return it->second;
  }
};

/// The Sinew kernel leaf of graphs/kernels/<file> on the first device of d's kind.
scl::kernel_spec leaf_spec(const direct_cl& d, const char* file, const char* kernel, std::vector<scl::arg::spec> args) {
  scl::kernel_spec s;
  s.file = d.dir + "/" + file;
  s.kernel = kernel;
  s.args = std::move(args);
  s.devices = d.kind();
  return s;
}

// ---------------------------------------------------------------- one case

/// One workload at one size: its variants (null = not available) and how to
/// spoil and check the shared output.
struct wl_case {
  std::string label;  ///< "saxpy 50M": table rows are "<label> <variant>"
  std::string key;    ///< "saxpy_50M": RATIO names are "wl_<key>_..."
  std::string unit;
  std::function<double(double)> to_metric;
  std::function<void()> poison;
  std::function<std::string()> check;      ///< C++ variants
  std::function<std::string()> check_cl;   ///< OpenCL variants (null: `check`)
  std::function<void()> sinew, tbb, omp, cl_leaf, cl_leaf_steal, cl_direct, gpu_leaf, gpu_direct;
};

/// What one benchmark measures of each case: `workloads` the C++ variants
/// and the OpenCL ones on PoCL, `workloads_gpu` (`gpu`) the OpenCL pair on
/// the GPU alone; `cl` is that device (null: no OpenCL variants). The GPU
/// gets a process of its own: a CUDA context's driver threads take cores
/// from OpenMP's static team (Segmentation 100^3 at 7.4 ms a run against
/// 40 us with the GPU hidden).
struct part {
  direct_cl* cl = nullptr;
  bool gpu = false;
};

/// What a case's OpenCL variants keep: the leaf's graphs (on `steal` too,
/// on PoCL) and the direct launch's kernel.
struct cl_state {
  std::optional<sinew::graph> leaf, leaf_steal;
  cl::Kernel kernel;
};

/// The OpenCL variants of `c` on `pt.cl` (null: none): the kernel leaf of `spec(d)` run by `run_on(graph)`, on
/// the CPU device also on `steal` (as many workers as the peers), and
/// `direct(d, kernel)`, the same kernel (`name` of graphs/kernels/`file`)
/// launched by hand. The functions must outlive the measurement.
template <class Spec, class Run, class Direct>
void add_opencl(wl_case& c, cl_state& st, const part& pt, const char* file, const char* name, const Spec& spec,
                const Run& run_on, const Direct& direct) {
  direct_cl* d = pt.cl;
  if (!d) return;
  st.leaf.emplace(scl::kernel_leaf(spec(*d)));
  st.kernel = d->kernel(file, name);
  const auto leaf = [&run_on, &st] { run_on(*st.leaf); };
  const auto launch = [&direct, &st, d] { direct(*d, st.kernel); };
  if (pt.gpu) {
    c.gpu_leaf = leaf;
    c.gpu_direct = launch;
    return;
  }
  static const std::unique_ptr<sinew::scheduler> steal = sinew::make_scheduler("steal", {.threads = sb::thread_count()});
  st.leaf_steal.emplace(scl::kernel_leaf(spec(*d)), sinew::graph_options{.scheduler = steal.get()});
  c.cl_leaf = leaf;
  c.cl_leaf_steal = [&run_on, &st] { run_on(*st.leaf_steal); };
  c.cl_direct = launch;
}

/// Measures the variants of `c`; returns the Sinew map series (for the triad ratio).
const sb::series* measure_case(sb::context& ctx, const wl_case& c, const part& pt) {
  auto one = [&](const char* what, const std::function<void()>& run, bool opencl,
                 const std::string& note) -> const sb::series* {
    if (!run || (!opencl && pt.gpu)) return nullptr;
    return &ctx.measure({.name = c.label + " " + what,
                         .unit = c.unit,
                         .better = sb::higher,
                         .setup = c.poison,
                         .run = run,
                         .to_metric = c.to_metric,
                         .check = opencl && c.check_cl ? c.check_cl : c.check,
                         .note = note});
  };
  const auto* s = one("sinew map", c.sinew, false, "C++ leaf, one unit");
  const auto* t = one("tbb::parallel_for", c.tbb, false, "auto_partitioner");
  const auto* l = one("sinew opencl leaf", c.cl_leaf, true, "kernel_leaf, PoCL");
  const auto* ls = one("sinew opencl leaf, steal", c.cl_leaf_steal, true, "the same on the steal scheduler");
  const auto* d = one("opencl direct", c.cl_direct, true, "same .cl, USE_HOST_PTR");
  const auto* gl = one("sinew opencl leaf, gpu", c.gpu_leaf, true, "kernel_leaf on the first GPU");
  const auto* gd = one("opencl direct, gpu", c.gpu_direct, true, "same .cl: write, NDRange, read back");
  const auto* o = one("openmp parallel for", c.omp, false, "schedule(static)");
  auto ratio = [&](const sb::series* a, const sb::series* b, const char* suffix, double target, const char* info) {
    if (a && b && a->stats.n && b->stats.n && b->stats.median > 0)
      ctx.ratio("wl_" + c.key + suffix, a->stats.median / b->stats.median, target, sb::higher, info);
  };
  ratio(s, t, "_vs_tbb", 0.95, "sinew map / tbb::parallel_for (medians)");
  ratio(s, o, "_vs_omp", 0.9, "sinew map / openmp parallel for (medians)");
  ratio(l, d, "_cl_vs_direct", 0.95, "sinew opencl leaf / direct OpenCL launch (medians)");
  ratio(ls, d, "_cl_steal_vs_direct", 0.95, "sinew opencl leaf on steal / direct OpenCL launch (medians)");
  ratio(gl, gd, "_gpu_vs_direct", 0.95, "sinew opencl leaf / direct OpenCL launch, both on the GPU (medians)");
  return s;
}

std::string size_label(std::size_t n) {
  if (n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "M";
  if (n % 1'000 == 0) return std::to_string(n / 1'000) + "k";
  return std::to_string(n);
}

/// "" when got == want element for element, else the first difference.
template <class A, class B>
std::string compare_exact(const A& got, const B& want, const char* what) {
  if (got.size() != want.size())
    return std::string(what) + ": " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i])) return std::string(what) + ": wrong value at element " + std::to_string(i);
  return {};
}

/// `body(begin, end)` over [0, n) under tbb::parallel_for (auto partitioner)
/// in the peers' arena. Bodies copy what they use into locals, as a tuned
/// hand-written loop would, so that byte stores cannot alias the loop's
/// parameters and the compiler vectorises.
template <class F>
void tbb_for(std::size_t n, std::size_t grain, F body) {
  sb::peer_arena().execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, grain),
                      [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
  });
}

#if defined(SINEW_BENCH_HAVE_OPENMP)
/// The same under OpenMP: one contiguous block per thread, i.e. `parallel
/// for schedule(static)` written out so that the body sees a range.
template <class F>
void omp_for(std::size_t n, F body) {
#pragma omp parallel
  {
    const std::size_t t = std::size_t(omp_get_thread_num()), nt = std::size_t(omp_get_num_threads());
    body(n * t / nt, n * (t + 1) / nt);
  }
}
#define SINEW_BENCH_OMP(n, body) [&] { omp_for(n, body); }
#else
#define SINEW_BENCH_OMP(n, body) nullptr
#endif

// ---------------------------------------------------------------- workloads

void saxpy_case(sb::context& ctx, std::size_t n, const part& pt) {
  const float a = 2.5f;
  wl::saxpy_inputs in = wl::make_saxpy_inputs(n, 11);
  const std::vector<float> ref = wl::saxpy_reference(a, in.x, in.y);
  std::vector<float> z(n, -1.0f);
  sinew::graph g(sinew::map<wl::saxpy>({a}));
  auto body = [a, xp = in.x.data(), yp = in.y.data(), zp = z.data()](std::size_t b, std::size_t e) {
    const float* x = xp;
    const float* y = yp;
    float* zz = zp;
    const float aa = a;
    for (std::size_t i = b; i < e; ++i) zz[i] = aa * x[i] + y[i];
  };
  wl_case c;
  c.label = "saxpy " + size_label(n);
  c.key = "saxpy_" + size_label(n);
  c.unit = "GB/s";
  c.to_metric = [n](double s) { return 12.0 * double(n) / s / 1e9; };
  c.poison = [&] { std::fill(z.begin(), z.end(), -1.0f); };
  c.check = [&]() -> std::string {
    // -march=native may contract a*x+y into an FMA in one variant and not another.
    for (std::size_t i = 0; i < n; ++i)
      if (!(std::fabs(z[i] - ref[i]) <= 1e-6f * std::fabs(ref[i]) + 1e-7f))
        return "z[" + std::to_string(i) + "] = " + std::to_string(z[i]) + ", expected " + std::to_string(ref[i]);
    return {};
  };
  // A run of graph h over this case's data: the map's graph here, the OpenCL leaves' below.
  const auto run_on = [&](sinew::graph& h) { h.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); };
  c.sinew = [&] { run_on(g); };
  c.tbb = [&] { tbb_for(n, 1, body); };
  c.omp = SINEW_BENCH_OMP(n, body);
  cl_state st;
  const auto spec = [&](const direct_cl& d) {
    return leaf_spec(d, "saxpy.cl", "saxpy", {scl::arg::input<float>(), scl::arg::input<float>(), scl::arg::output<float>(),
                                              scl::arg::scalar(a), scl::arg::count()});
  };
  const auto direct = [&](direct_cl& d, cl::Kernel& k) {
    auto bx = d.in(in.x.data(), n), by = d.in(in.y.data(), n), bz = d.out(z.data(), n);
    k.setArg(0, bx), k.setArg(1, by), k.setArg(2, bz), k.setArg(3, a), k.setArg(4, cl_uint(n));
    d.launch(k, cl::NDRange(n), bz, z.data(), n * sizeof(float));
  };
  add_opencl(c, st, pt, "saxpy.cl", "saxpy", spec, run_on, direct);
  const sb::series* s = measure_case(ctx, c, pt);
  if (s && s->stats.n) {
    double limit = sb::triad_gbs(ctx);
    if (limit > 0)
      ctx.ratio("wl_" + c.key + "_vs_triad", s->stats.median / limit, 0.85, sb::higher,
                "sinew map GB/s / STREAM triad GB/s " + sb::format_double(limit, 2) + " (hardware limit)");
  }
}

void series_case(sb::context& ctx, std::size_t n, const part& pt) {
  // pt.cl null: no OpenCL variants at this size (see run_cases()).
  const int steps = 1000;
  const std::vector<wl::coeff> ref = wl::series_reference(n, steps);
  std::vector<std::vector<wl::coeff>> out(1, std::vector<wl::coeff>(n));
  std::vector<wl::coeff>& o = out[0];
  sinew::graph g(wl::series_node(steps));
  auto body = [&o, steps](std::size_t b, std::size_t e) {
    wl::coeff* p = o.data();
    for (std::size_t i = b; i < e; ++i) p[i] = wl::series_coefficient(i, steps);
  };
  wl_case c;
  c.label = "series " + size_label(n);
  c.key = "series_" + size_label(n);
  c.unit = "kcoeff/s";
  c.to_metric = [n](double s) { return double(n) / s / 1e3; };
  c.poison = [&] {
    out.resize(1);
    out[0].assign(n, wl::coeff{-1.0, -1.0});
  };
  c.check = [&] { return compare_exact(out.at(0), ref, "series"); };
  c.check_cl = [&]() -> std::string {  // PoCL's pow/cos/sin round differently from glibc's
    if (out.size() != 1 || out[0].size() != n) return "series (OpenCL): wrong output size";
    for (std::size_t i = 0; i < n; ++i)
      for (double d : {out[0][i].a - ref[i].a, out[0][i].b - ref[i].b})
        if (!(std::fabs(d) <= 1e-12 * (std::fabs(ref[i].a) + std::fabs(ref[i].b)) + 1e-14))
          return "series (OpenCL): coefficient " + std::to_string(i) + " differs from the reference";
    return {};
  };
  const auto run_on = [&](sinew::graph& h) { h.run(wl::series_source(n), sinew::into(out)).get(); };
  c.sinew = [&] { run_on(g); };
  c.tbb = [&] { tbb_for(n, 1, body); };
  c.omp = SINEW_BENCH_OMP(n, body);
  cl_state st;
  const auto spec = [&](const direct_cl& d) {
    return leaf_spec(d, "series.cl", "series", {scl::arg::output<wl::coeff>(), scl::arg::scalar<int>(steps), scl::arg::count()});
  };
  const auto direct = [&](direct_cl& d, cl::Kernel& k) {
    auto bo = d.out(out[0].data(), n);
    k.setArg(0, bo), k.setArg(1, cl_int(steps)), k.setArg(2, cl_uint(n));
    d.launch(k, cl::NDRange(n), bo, out[0].data(), n * sizeof(wl::coeff));
  };
  add_opencl(c, st, pt, "series.cl", "series", spec, run_on, direct);
  measure_case(ctx, c, pt);
}

void segmentation_case(sb::context& ctx, std::size_t side, const part& pt) {
  const std::uint8_t lo = 85, hi = 170;
  sinew::array<std::uint8_t, 3> vol = wl::make_volume(side, side, side, 5);
  const sinew::array<std::uint8_t, 3> ref = wl::segmentation_reference(vol, lo, hi);
  sinew::array<std::uint8_t, 3> seg(vol.shape());
  const std::size_t n = vol.size();
  sinew::graph g(sinew::map<wl::segmentation>({lo, hi}));
  auto body = [lo, hi, ip = vol.data(), op = seg.data()](std::size_t b, std::size_t e) {
    const std::uint8_t* in = ip;
    std::uint8_t* o = op;
    const wl::segmentation f{lo, hi};
    for (std::size_t i = b; i < e; ++i) f(in[i], o + i);
  };
  wl_case c;
  c.label = "segmentation " + std::to_string(side) + "^3";
  c.key = "segmentation_" + std::to_string(side);
  c.unit = "Mvoxel/s";
  c.to_metric = [n](double s) { return double(n) / s / 1e6; };
  c.poison = [&] { std::fill(seg.begin(), seg.end(), std::uint8_t(77)); };
  c.check = [&] { return compare_exact(seg, ref, "segmentation"); };
  const auto run_on = [&](sinew::graph& h) { h.run(sinew::from_arrays(vol), sinew::into_arrays(seg)).get(); };
  c.sinew = [&] { run_on(g); };
  c.tbb = [&] { tbb_for(n, 1, body); };
  c.omp = SINEW_BENCH_OMP(n, body);
  cl_state st;
  const auto spec = [&](const direct_cl& d) {
    return leaf_spec(d, "segmentation.cl", "segmentation", {scl::arg::input<std::uint8_t>(), scl::arg::output<std::uint8_t>(),
                                                            scl::arg::scalar(lo), scl::arg::scalar(hi), scl::arg::cols(),
                                                            scl::arg::rows()});
  };
  const auto direct = [&](direct_cl& d, cl::Kernel& k) {
    auto bi = d.in(vol.data(), n), bo = d.out(seg.data(), n);
    k.setArg(0, bi), k.setArg(1, bo), k.setArg(2, lo), k.setArg(3, hi), k.setArg(4, cl_uint(side)),
        k.setArg(5, cl_uint(side));
    d.launch(k, cl::NDRange(side, side, side), bo, seg.data(), n);
  };
  add_opencl(c, st, pt, "segmentation.cl", "segmentation", spec, run_on, direct);
  measure_case(ctx, c, pt);
}

void solarize_case(sb::context& ctx, std::size_t side, const part& pt) {
  const std::uint8_t t = 128;
  sinew::array<wl::rgba8, 2> img = wl::make_image(side, side, 3);
  const sinew::array<wl::rgba8, 2> ref = wl::solarize_reference(img, t);
  sinew::array<wl::rgba8, 2> out(img.shape());
  const std::size_t n = img.size();
  sinew::graph g(sinew::map<wl::solarize>({t}));
  auto body = [t, ip = img.data(), op = out.data()](std::size_t b, std::size_t e) {
    const wl::rgba8* in = ip;
    wl::rgba8* o = op;
    const wl::solarize f{t};
    for (std::size_t i = b; i < e; ++i) f(in[i], o + i);
  };
  wl_case c;
  c.label = "solarize " + std::to_string(side) + "^2";
  c.key = "solarize_" + std::to_string(side);
  c.unit = "Mpixel/s";
  c.to_metric = [n](double s) { return double(n) / s / 1e6; };
  c.poison = [&] { std::fill(out.begin(), out.end(), wl::rgba8{1, 2, 3, 4}); };
  c.check = [&] { return compare_exact(out, ref, "solarize"); };
  const auto run_on = [&](sinew::graph& h) { h.run(sinew::from_arrays(img), sinew::into_arrays(out)).get(); };
  c.sinew = [&] { run_on(g); };
  c.tbb = [&] { tbb_for(n, 1, body); };
  c.omp = SINEW_BENCH_OMP(n, body);
  cl_state st;
  const auto spec = [&](const direct_cl& d) {
    return leaf_spec(d, "solarize.cl", "solarize", {scl::arg::input<wl::rgba8>(), scl::arg::output<wl::rgba8>(),
                                                    scl::arg::scalar(t), scl::arg::cols(), scl::arg::rows()});
  };
  const auto direct = [&](direct_cl& d, cl::Kernel& k) {
    auto bi = d.in(img.data(), n), bo = d.out(out.data(), n);
    k.setArg(0, bi), k.setArg(1, bo), k.setArg(2, t), k.setArg(3, cl_uint(side)), k.setArg(4, cl_uint(side));
    d.launch(k, cl::NDRange(side, side), bo, out.data(), n * sizeof(wl::rgba8));
  };
  add_opencl(c, st, pt, "solarize.cl", "solarize", spec, run_on, direct);
  measure_case(ctx, c, pt);
}

/// The cases at their sizes; `gpu`: the GPU pair alone (workloads_gpu), else
/// the C++ and PoCL variants (workloads).
void run_cases(sb::context& ctx, bool gpu) {
  const bool smoke = ctx.smoke(), quick = ctx.quick();
  const std::size_t saxpy_n = smoke ? 1'000'000 : quick ? 10'000'000 : 50'000'000;
  const std::vector<std::size_t> series_n = smoke ? std::vector<std::size_t>{64}
                                            : quick ? std::vector<std::size_t>{1000}
                                                    : std::vector<std::size_t>{1000, 10000};
  const std::vector<std::size_t> seg_side = smoke ? std::vector<std::size_t>{32}
                                            : quick ? std::vector<std::size_t>{100, 200}
                                                    : std::vector<std::size_t>{100, 200, 400};
  const std::vector<std::size_t> sol_side = smoke ? std::vector<std::size_t>{256}
                                            : quick ? std::vector<std::size_t>{1024, 2048}
                                                    : std::vector<std::size_t>{1024, 2048, 4096, 8192};
  auto list = [](const std::vector<std::size_t>& v, const char* suffix) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ", ") + std::to_string(x) + suffix;
    return s;
  };
  ctx.param("threads", sb::thread_count());
  ctx.param("saxpy_elements", saxpy_n);
  ctx.param("series_coefficients", list(series_n, ""));
  ctx.param("segmentation_volumes", list(seg_side, "^3"));
  ctx.param("solarize_images", list(sol_side, "^2"));

  // The device of each kind, named in the parameters, or a note saying why its variants are skipped.
  auto open = [&](cl_device_type type, const char* param, const char* variants) {
    std::string why;
    std::optional<direct_cl> d = direct_cl::open(type, why);
    if (d) {
      ctx.param(param, d->name());
    } else {
      ctx.note(std::string(variants) + " variants skipped: " + why);
      std::printf("   workloads: %s variants skipped: %s\n", variants, why.c_str());
    }
    return d;
  };
  std::optional<direct_cl> dev = gpu ? open(CL_DEVICE_TYPE_GPU, "opencl_gpu", "GPU")
                                     : open(CL_DEVICE_TYPE_CPU, "opencl_device", "OpenCL");
  if (gpu && !dev) return;
  const part pt{.cl = dev ? &*dev : nullptr, .gpu = gpu};
  const part cxx_only{.gpu = gpu};
  saxpy_case(ctx, saxpy_n, pt);
  // PoCL's double-precision pow/cos make Series ~10x slower than the C++
  // leaf: the OpenCL variants run at the smallest size only.
  for (auto n : series_n) series_case(ctx, n, n == series_n.front() ? pt : cxx_only);
  if (dev && series_n.size() > 1)
    ctx.note("series: OpenCL variants at " + std::to_string(series_n.front()) + " coefficients only");
  for (auto s : seg_side) segmentation_case(ctx, s, pt);
  for (auto s : sol_side) solarize_case(ctx, s, pt);
}

const sb::registrar reg("workloads",
                        "Marques14 workloads (saxpy 50M, series, segmentation 100^3..400^3, solarize 1024^2..8192^2): "
                        "Sinew map vs tbb::parallel_for and OpenMP; Sinew OpenCL leaf vs direct OpenCL on PoCL",
                        [](sb::context& ctx) { run_cases(ctx, false); });
const sb::registrar reg_gpu("workloads_gpu",
                            "the same cases' OpenCL leaf vs direct OpenCL on the first OpenCL GPU (skipped without one)",
                            [](sb::context& ctx) { run_cases(ctx, true); });

}  // namespace
