// starpu_series / starpu_saxpy: Sinew's balanced multi-device map against
// StarPU (Debian's libstarpu-dev 1.3) with its `dmda` scheduler, on the same
// machine in the same process.
//
// Built as its own executable, sinew-bench-starpu, only when pkg-config
// finds starpu-1.3 (bench/CMakeLists.txt), so that sinew-bench does not
// depend on StarPU. Same command line, method, table, RATIO lines and JSON
// as sinew-bench (it links the same bench_main/bench_report/bench_support):
//
//   build/bench/sinew-bench-starpu --all --json bench/results/<N>core/e2e-starpu.json
//
// Variants of each workload (one unit per run, the output checked after every run):
//   sinew balanced map     sinew::multi_device_map over the host executor (all workers) and
//                          every OpenCL GPU running graphs/kernels/<k>.cl, iterative balancer
//                          (tuned before timing); without a GPU the host executor alone
//                          (SINEW_BENCH_OPENCL=cpu: PoCL's CPU device for both runtimes, which
//                          only exercises the OpenCL codelets: it shares the host's cores)
//   starpu dmda            the same work cut into `blocks` equal blocks, one StarPU task per
//                          block, codelets with a CPU function and (when StarPU sees an OpenCL
//                          GPU) an OpenCL function running the same kernel maths; data registered,
//                          partitioned, unpartitioned and unregistered every run, as a user
//                          handing StarPU a fresh array would
//   starpu dmda, cpu only  informational when there is a GPU: StarPU restarted without OpenCL
//
// Debian builds StarPU with OpenCL (STARPU_USE_OPENCL) but without CUDA and
// with STARPU_MAXCPUS = 4: at most 4 CPU workers whatever the machine has.
// The parameters record what StarPU actually started (workers per kind).
// StarPU's performance models live in a fresh STARPU_HOME per process; the
// untimed calibration runs (param `starpu_calibration_runs`) fill them, so
// dmda schedules on calibrated models during the timed runs.
//
// RATIO starpu_<case> = Sinew ms/unit / StarPU dmda ms/unit, target <= 1.0.
#include <starpu.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "../bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
namespace scl = sinew::opencl;

/// graphs/kernels/<name>: $SINEW_KERNELS_DIR, else ./graphs/kernels, else
/// found from this source file (as sinew::detail::group_cl::kernel_dir).
std::string kernel_path(const char* name) {
  namespace fs = std::filesystem;
  if (const char* e = std::getenv("SINEW_KERNELS_DIR")) return (fs::path(e) / name).string();
  if (fs::exists(fs::path("graphs/kernels") / name)) return (fs::path("graphs/kernels") / name).string();
  return (fs::path(__FILE__).parent_path().parent_path().parent_path() / "graphs" / "kernels" / name).string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw sinew::error(path + ": cannot read the kernel source");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

scl::kernel_spec spec(const char* file, const char* kernel, std::vector<scl::arg::spec> args) {
  scl::kernel_spec k;
  k.file = kernel_path(file);
  k.kernel = kernel;
  k.args = std::move(args);
  return k;
}

/// The OpenCL devices both runtimes get: "gpu" when there is an OpenCL GPU;
/// "cpu" (PoCL, sharing the host's cores: only to exercise the OpenCL
/// codelets) when SINEW_BENCH_OPENCL=cpu and there is no GPU; else "".
std::string opencl_kind() {
  bool gpu = false, cpu = false;
  for (auto& d : scl::list_devices()) gpu |= d.kind == scl::device_kind::gpu, cpu |= d.kind == scl::device_kind::cpu;
  const char* env = std::getenv("SINEW_BENCH_OPENCL");
  if (gpu) return "gpu";
  if (cpu && env && std::string(env) == "cpu") {
    setenv("STARPU_OPENCL_ON_CPUS", "1", 1);  // StarPU skips OpenCL CPU devices by default
    return "cpu";
  }
  return "";
}

// ------------------------------------------------------------------ StarPU

// StarPU hands an OpenCL codelet the parent buffer plus a byte offset, so
// the kernels take offsets; their maths is graphs/kernels/<k>.cl's (Series'
// functions are that file itself, prepended).
const char* const saxpy_cl_src = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void saxpy_at(__global const float* x, uint ox, __global const float* y, uint oy,
                       __global float* z, uint oz, const float a, const uint n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  z[oz + i] = a * x[ox + i] + y[oy + i];
}
)CL";

const char* const series_cl_wrapper = R"CL(
__kernel void series_at(__global double2* out, uint oo, const int steps, const uint n, const uint first) {
  const size_t j = get_global_id(0);
  if (j >= n) return;
  const size_t i = first + j;
  if (i == 0) {
    out[oo] = (double2)(trapezoid_integrate(0.0, 2.0, steps, 0.0, 0) / 2.0, 0.0);
    return;
  }
  const double omega = 3.1415926535897932;
  out[oo + j] = (double2)(trapezoid_integrate(0.0, 2.0, steps, omega * (double)i, 1),
                          trapezoid_integrate(0.0, 2.0, steps, omega * (double)i, 2));
}
)CL";

starpu_opencl_program saxpy_prog, series_prog;

void check_cl(cl_int err, const char* what) {
  if (err != CL_SUCCESS) STARPU_OPENCL_REPORT_ERROR_WITH_MSG(what, err);
}

void saxpy_cpu(void* buffers[], void* arg) {
  float a;
  starpu_codelet_unpack_args(arg, &a);
  const auto* x = reinterpret_cast<const float*>(STARPU_VECTOR_GET_PTR(buffers[0]));
  const auto* y = reinterpret_cast<const float*>(STARPU_VECTOR_GET_PTR(buffers[1]));
  auto* z = reinterpret_cast<float*>(STARPU_VECTOR_GET_PTR(buffers[2]));
  const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned i = 0; i < n; ++i) z[i] = a * x[i] + y[i];
}

/// Loads kernel `name` of `prog` for this worker's device, sets `args` in
/// order (each by address, its own size), runs `n` work-items and waits
/// (synchronous codelet: no STARPU_OPENCL_ASYNC).
template <class... A>
void run_opencl(starpu_opencl_program& prog, const char* name, cl_uint n, const A&... args) {
  cl_kernel kernel;
  cl_command_queue queue;
  check_cl(starpu_opencl_load_kernel(&kernel, &queue, &prog, name, starpu_worker_get_devid(starpu_worker_get_id())), name);
  cl_uint i = 0;
  (check_cl(clSetKernelArg(kernel, i++, sizeof(A), &args), name), ...);
  const size_t global = n;
  check_cl(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr), name);
  check_cl(clFinish(queue), name);
  starpu_opencl_release_kernel(kernel);
}

void saxpy_opencl(void* buffers[], void* arg) {
  float a;
  starpu_codelet_unpack_args(arg, &a);
  const cl_uint n = STARPU_VECTOR_GET_NX(buffers[0]);
  cl_mem m[3];
  cl_uint off[3];
  for (int k = 0; k < 3; ++k) {
    m[k] = reinterpret_cast<cl_mem>(STARPU_VECTOR_GET_DEV_HANDLE(buffers[k]));
    off[k] = cl_uint(STARPU_VECTOR_GET_OFFSET(buffers[k]) / sizeof(float));
  }
  run_opencl(saxpy_prog, "saxpy_at", n, m[0], off[0], m[1], off[1], m[2], off[2], a, n);
}

void series_cpu(void* buffers[], void* arg) {
  unsigned first;
  int steps;
  starpu_codelet_unpack_args(arg, &first, &steps);
  auto* out = reinterpret_cast<wl::coeff*>(STARPU_VECTOR_GET_PTR(buffers[0]));
  const unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned j = 0; j < n; ++j) out[j] = wl::series_coefficient(first + j, steps);
}

void series_opencl(void* buffers[], void* arg) {
  cl_uint first;
  cl_int steps;
  starpu_codelet_unpack_args(arg, &first, &steps);
  const cl_uint n = STARPU_VECTOR_GET_NX(buffers[0]);
  cl_mem m = reinterpret_cast<cl_mem>(STARPU_VECTOR_GET_DEV_HANDLE(buffers[0]));
  const cl_uint off = cl_uint(STARPU_VECTOR_GET_OFFSET(buffers[0]) / sizeof(wl::coeff));
  run_opencl(series_prog, "series_at", n, m, off, steps, n, first);
}

/// History-based model and codelet of one kernel (StarPU's C structs,
/// zero-initialised and filled field by field).
struct starpu_kernel {
  starpu_perfmodel model{};
  starpu_codelet cl{};
  starpu_kernel(const char* symbol, starpu_cpu_func_t cpu, starpu_opencl_func_t ocl, int nbuffers,
                const std::vector<starpu_data_access_mode>& modes) {
    model.type = STARPU_HISTORY_BASED;
    model.symbol = symbol;
    cl.cpu_funcs[0] = cpu;
    cl.opencl_funcs[0] = ocl;
    cl.nbuffers = nbuffers;
    for (int k = 0; k < nbuffers; ++k) cl.modes[k] = modes[std::size_t(k)];
    cl.model = &model;
    cl.name = symbol;
  }
};

/// StarPU started with dmda for the lifetime of the object; `opencl` false
/// keeps it on CPU workers. Throws sinew::error when starpu_init fails.
class starpu_session {
 public:
  starpu_session(unsigned cpus, bool opencl) {
    starpu_conf conf;
    starpu_conf_init(&conf);
    conf.sched_policy_name = "dmda";
    conf.ncpus = int(cpus);
    conf.ncuda = 0;
    conf.nopencl = opencl ? -1 : 0;
    int r = starpu_init(&conf);
    if (r != 0) throw sinew::error("starpu_init failed (" + std::to_string(r) + ")");
    if (starpu_opencl_worker_get_count() > 0) {
      check_cl(starpu_opencl_load_opencl_from_string(saxpy_cl_src, &saxpy_prog, nullptr), "build saxpy_at");
      std::string series = read_file(kernel_path("series.cl")) + series_cl_wrapper;
      check_cl(starpu_opencl_load_opencl_from_string(series.c_str(), &series_prog, nullptr), "build series_at");
      programs_ = true;
    }
  }
  ~starpu_session() {
    if (programs_) {
      starpu_opencl_unload_opencl(&saxpy_prog);
      starpu_opencl_unload_opencl(&series_prog);
    }
    starpu_shutdown();
  }
  starpu_session(const starpu_session&) = delete;
  starpu_session& operator=(const starpu_session&) = delete;

  static std::string workers() {
    return std::to_string(starpu_cpu_worker_get_count()) + " cpu + " + std::to_string(starpu_opencl_worker_get_count()) +
           " opencl";
  }

 private:
  bool programs_ = false;
};

/// One run of `n` elements of `elem` bytes per registered array, cut into
/// `blocks` tasks of codelet `k`; `args(b, first)` inserts block b's task.
template <class Insert>
void starpu_run(const std::vector<std::pair<void*, std::size_t>>& arrays, std::size_t n, unsigned blocks,
                Insert insert) {
  std::vector<starpu_data_handle_t> h(arrays.size());
  starpu_data_filter f{};
  f.filter_func = starpu_vector_filter_block;
  f.nchildren = blocks;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    starpu_vector_data_register(&h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(arrays[k].first), uint32_t(n),
                                arrays[k].second);
    starpu_data_partition(h[k], &f);
  }
  std::size_t first = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<starpu_data_handle_t> sub(h.size());
    for (std::size_t k = 0; k < h.size(); ++k) sub[k] = starpu_data_get_sub_data(h[k], 1, b);
    insert(sub, unsigned(first));
    first += STARPU_VECTOR_GET_NX(starpu_data_get_interface_on_node(sub[0], STARPU_MAIN_RAM));
  }
  starpu_task_wait_for_all();
  for (auto& x : h) {
    starpu_data_unpartition(x, STARPU_MAIN_RAM);
    starpu_data_unregister(x);
  }
}

void submit_or_throw(int r, const char* what) {
  if (r != 0) throw sinew::error(std::string("starpu_task_insert (") + what + ") failed: " + std::to_string(r));
}

/// A fresh STARPU_HOME for this process, so that stale performance models of
/// another machine or build are never used.
void fresh_starpu_home() {
  static bool done = false;
  if (done) return;
  done = true;
  char tmpl[] = "/tmp/sinew-bench-starpu-XXXXXX";
  if (const char* d = mkdtemp(tmpl)) setenv("STARPU_HOME", d, 1);
  setenv("STARPU_SILENT", "1", 0);
}

// ------------------------------------------------------------------ the benchmark

/// Measures one workload: Sinew, then StarPU (with OpenCL when there is a
/// GPU, then CPU only). `sinew_run` and `starpu_insert_run` do one run each.
template <class SinewRun, class StarpuRun>
void compare(sb::context& ctx, const std::string& key, bool gpu, const std::function<void()>& poison,
             const std::function<std::string()>& check, SinewRun sinew_run, StarpuRun starpu_run_once) {
  auto ms = [](double s) { return s * 1e3; };
  const auto& s = ctx.measure({.name = "sinew balanced map", .unit = "ms/unit", .better = sb::lower, .setup = poison,
                               .run = sinew_run, .to_metric = ms, .check = check,
                               .note = gpu ? "host + OpenCL device(s), iterative balancer" : "host executor"});
  const int calibration = ctx.smoke() ? 1 : 5;
  ctx.param("starpu_calibration_runs", calibration);
  auto one = [&](bool opencl, const char* name) -> const sb::series& {
    starpu_session session(sb::thread_count(), opencl);
    ctx.param(std::string("starpu_workers") + (opencl || !gpu ? "" : "_cpu_only"), starpu_session::workers());
    for (int k = 0; k < calibration; ++k) {
      poison();
      starpu_run_once();
    }
    return ctx.measure({.name = name, .unit = "ms/unit", .better = sb::lower, .setup = poison,
                        .run = starpu_run_once, .to_metric = ms, .check = check,
                        .note = "StarPU " + starpu_session::workers() + " workers"});
  };
  const auto& p = one(gpu, gpu ? "starpu dmda" : "starpu dmda (cpu workers)");
  if (gpu) one(false, "starpu dmda, cpu only");
  if (s.stats.n && p.stats.n && p.stats.median > 0)
    ctx.ratio("starpu_" + key, s.stats.median / p.stats.median, 1.0, sb::lower,
              "sinew balanced map ms / StarPU dmda ms (medians)");
}

/// Sinew's devices: the host executor, plus every OpenCL device of kind `ocl` running `k`.
template <class F>
std::vector<std::shared_ptr<sinew::device_executor>> sinew_devices(const std::string& ocl, F f, sinew::map_options mo,
                                                                   scl::kernel_spec k) {
  std::vector<std::shared_ptr<sinew::device_executor>> d{sinew::host<F>(f, mo)};
  if (!ocl.empty()) {
    k.devices = ocl;
    for (auto& e : scl::kernel_executors(k)) d.push_back(e);
  }
  return d;
}

/// Runs `once` until the balancer of `m` is tuned (real units, untimed).
void tune(sinew::node& m, const std::function<void()>& once, const std::function<void()>& poison, sb::context& ctx) {
  int runs = 0;
  for (; !sinew::device_stats(m).tuned && runs < 1000; ++runs) {
    poison();
    once();
  }
  auto st = sinew::device_stats(m);
  std::string w;
  for (std::size_t i = 0; i < st.weights.size(); ++i)
    w += (i ? ", " : "") + st.devices[i] + " " + sb::format_double(st.weights[i], 1) + "%";
  ctx.note("sinew: tuned in " + std::to_string(st.tuning_executions) + " execution(s); weights " + w);
}

unsigned blocks_for(std::size_t n, unsigned want) { return unsigned(std::max<std::size_t>(1, std::min<std::size_t>(n, want))); }

void run_series(sb::context& ctx) {
  fresh_starpu_home();
  const std::size_t n = ctx.smoke() ? 256 : ctx.quick() ? 2000 : 10000;
  const int steps = 1000;
  const unsigned blocks = blocks_for(n, 100);
  const std::string ocl = opencl_kind();
  const bool gpu = !ocl.empty();
  ctx.param("coefficients", n);
  ctx.param("starpu_blocks", blocks);
  const std::vector<wl::coeff> ref = wl::series_reference(n, steps);
  std::vector<std::vector<wl::coeff>> out;
  std::vector<wl::coeff> flat(n);
  auto devs = sinew_devices(ocl, wl::series{steps}, {.min_task = 1},
                            spec("series.cl", "series", {scl::arg::output<wl::coeff>(), scl::arg::scalar<int>(steps), scl::arg::count()}));
  sinew::node m = sinew::multi_device_map(devs, sinew::balance::iterative());
  sinew::graph g(m);
  bool from_starpu = false;
  auto poison = [&] {
    out.clear();
    std::fill(flat.begin(), flat.end(), wl::coeff{-1.0, -1.0});
  };
  auto check = [&]() -> std::string {
    const std::vector<wl::coeff>* got = from_starpu ? &flat : out.size() == 1 ? &out[0] : nullptr;
    if (!got || got->size() != n) return "series: no result";
    // OpenCL's pow/cos/sin may differ in the last bits from glibc's.
    auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::fabs(y) + 1e-14; };
    for (std::size_t i = 0; i < n; ++i)
      if (!close((*got)[i].a, ref[i].a) || !close((*got)[i].b, ref[i].b))
        return "series coefficient " + std::to_string(i) + " differs from the sequential reference";
    return {};
  };
  auto sinew_once = [&] { g.run(wl::series_source(n), sinew::into(out)).get(); };
  tune(m, sinew_once, poison, ctx);
  starpu_kernel k("sinew_bench_series", series_cpu, series_opencl, 1, {STARPU_W});
  auto starpu_once = [&] {
    from_starpu = true;
    starpu_run({{flat.data(), sizeof(wl::coeff)}}, n, blocks, [&](auto& sub, unsigned first) {
      submit_or_throw(starpu_task_insert(&k.cl, STARPU_W, sub[0], STARPU_VALUE, &first, sizeof(first), STARPU_VALUE,
                                         &steps, sizeof(steps), 0),
                      "series");
    });
  };
  compare(ctx, "series", gpu, poison, check, [&] { from_starpu = false; sinew_once(); }, starpu_once);
}

void run_saxpy(sb::context& ctx) {
  fresh_starpu_home();
  const std::size_t n = ctx.smoke() ? 1'000'000 : ctx.quick() ? 4'000'000 : 32'000'000;
  const unsigned blocks = 64;
  const float a = 2.5f;
  const std::string ocl = opencl_kind();
  const bool gpu = !ocl.empty();
  ctx.param("elements", n);
  ctx.param("starpu_blocks", blocks);
  wl::saxpy_inputs in = wl::make_saxpy_inputs(n, 7);
  std::vector<float> z(n);
  auto devs = sinew_devices(ocl, wl::saxpy{a}, {},
                            spec("saxpy.cl", "saxpy", {scl::arg::input<float>(), scl::arg::input<float>(), scl::arg::output<float>(),
                                                     scl::arg::scalar(a), scl::arg::count()}));
  sinew::node m = sinew::multi_device_map(devs, sinew::balance::iterative());
  sinew::graph g(m);
  auto poison = [&] { std::fill(z.begin(), z.end(), -7.0f); };
  auto check = [&]() -> std::string {
    for (std::size_t i = 0; i < n; ++i)  // -march=native may contract one variant into an FMA
      if (!(std::fabs(z[i] - (a * in.x[i] + in.y[i])) <= 1e-6f * std::fabs(a * in.x[i] + in.y[i]) + 1e-7f))
        return "z[" + std::to_string(i) + "] is wrong";
    return {};
  };
  auto sinew_once = [&] { g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); };
  tune(m, sinew_once, poison, ctx);
  starpu_kernel k("sinew_bench_saxpy", saxpy_cpu, saxpy_opencl, 3, {STARPU_R, STARPU_R, STARPU_W});
  auto starpu_once = [&] {
    starpu_run({{in.x.data(), sizeof(float)}, {in.y.data(), sizeof(float)}, {z.data(), sizeof(float)}}, n, blocks,
               [&](auto& sub, unsigned) {
                 submit_or_throw(starpu_task_insert(&k.cl, STARPU_R, sub[0], STARPU_R, sub[1], STARPU_W, sub[2],
                                                    STARPU_VALUE, &a, sizeof(a), 0),
                                 "saxpy");
               });
  };
  compare(ctx, "saxpy", gpu, poison, check, sinew_once, starpu_once);
}

const sb::registrar reg_series("starpu_series",
                               "Series (10000 coefficients, quick 2000): Sinew balanced multi-device map vs StarPU "
                               "dmda (100 blocks; OpenCL codelet when StarPU sees a GPU)",
                               run_series);
const sb::registrar reg_saxpy("starpu_saxpy",
                              "saxpy (32M floats, quick 4M): Sinew balanced multi-device map vs StarPU dmda (64 "
                              "blocks; OpenCL codelet when StarPU sees a GPU)",
                              run_saxpy);

}  // namespace
