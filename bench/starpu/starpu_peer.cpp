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
//   starpu dmda, registered per unit   the work cut into `blocks` equal blocks, one StarPU task per
//                          block, codelets with a CPU function and (when StarPU sees an OpenCL
//                          GPU) an OpenCL function running the same kernel maths; data registered,
//                          partitioned, unpartitioned and unregistered every run, as a user
//                          handing StarPU a fresh array would
//   starpu dmda, registered once       the same tasks on arrays registered and partitioned once,
//                          outside the timed runs; a run ends when its outputs are back in main
//                          memory, and before each run the host writes every block anew (device
//                          copies dropped), so inputs travel every unit as Sinew's do
//   sinew balanced map, StarPU's host workers   sinew::multi_device_map over the host executor
//                          and every OpenCL GPU running graphs/kernels/<k>.cl, iterative
//                          balancer (tuned before timing), the graph on a tbb_scheduler with as
//                          many workers as StarPU started CPU workers; without a GPU the host
//                          executor alone (SINEW_BENCH_OPENCL=cpu: PoCL's CPU device for both
//                          runtimes, which only exercises the OpenCL codelets: it shares the
//                          host's cores)
//   sinew balanced map, all host workers  informational, where that is more: all workers
//   starpu dmda, cpu only  informational when there is a GPU: StarPU restarted without OpenCL
//
// Debian builds StarPU with OpenCL (STARPU_USE_OPENCL) but without CUDA and
// with STARPU_MAXCPUS = 4: at most 4 CPU workers whatever the machine has.
// The parameters record what StarPU actually started (workers per kind).
// StarPU's performance models live in a fresh STARPU_HOME per process; the
// untimed calibration runs (param `starpu_calibration_runs`) fill them, so
// dmda schedules on calibrated models during the timed runs.
//
// RATIO (ms/unit medians, Sinew on StarPU's number of host workers, target <= 1.0):
//   starpu_<case>                    / StarPU registered per unit
//   starpu_<case>_registered_once    / StarPU registered once
//   starpu_<case>_all_workers        informational: Sinew on all workers / StarPU per unit
//                                    (lopsided where StarPU stops at 4 CPU workers)
#include <starpu.h>

#include "source_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "../bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
namespace scl = sinew::opencl;

std::string kernel_path(const char* name) { return sinew_support::kernel_file(name); }

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

/// One array StarPU works on: its elements, their size, and whether the
/// tasks write it.
struct starpu_array {
  void* data;
  std::size_t elem;
  bool output;
};

/// Arrays of `n` elements registered with StarPU and partitioned into
/// `blocks` equal sub-vectors for the lifetime of the object; the destructor
/// unpartitions them into main memory (bringing the results home) and
/// unregisters them.
class starpu_arrays {
 public:
  starpu_arrays(const std::vector<starpu_array>& arrays, std::size_t n, unsigned blocks)
      : arrays_(arrays), h_(arrays.size()), blocks_(blocks) {
    starpu_data_filter f{};
    f.filter_func = starpu_vector_filter_block;
    f.nchildren = blocks;
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      starpu_vector_data_register(&h_[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(arrays[k].data), uint32_t(n),
                                  arrays[k].elem);
      starpu_data_partition(h_[k], &f);
    }
  }
  ~starpu_arrays() {
    for (auto& x : h_) {
      starpu_data_unpartition(x, STARPU_MAIN_RAM);
      starpu_data_unregister(x);
    }
  }
  starpu_arrays(const starpu_arrays&) = delete;
  starpu_arrays& operator=(const starpu_arrays&) = delete;

  /// One task per block: `insert(sub, first)` with the block's sub-handles
  /// (one per array) and the index of its first element.
  template <class Insert>
  void submit(const Insert& insert) const {
    std::size_t first = 0;
    for (unsigned b = 0; b < blocks_; ++b) {
      std::vector<starpu_data_handle_t> sub(h_.size());
      for (std::size_t k = 0; k < h_.size(); ++k) sub[k] = block(k, b);
      insert(sub, unsigned(first));
      first += STARPU_VECTOR_GET_NX(starpu_data_get_interface_on_node(sub[0], STARPU_MAIN_RAM));
    }
  }

  /// Waits until every output block is valid in main memory (after the
  /// tasks writing it: acquires keep the order of submission), fetching
  /// the blocks concurrently.
  void fetch_outputs() const {
    std::vector<starpu_data_handle_t> out;
    for (std::size_t k = 0; k < h_.size(); ++k)
      for (unsigned b = 0; b < blocks_ && arrays_[k].output; ++b) out.push_back(block(k, b));
    std::latch fetched(std::ptrdiff_t(out.size()));
    for (auto h : out)
      if (starpu_data_acquire_cb(h, STARPU_R, [](void* l) { static_cast<std::latch*>(l)->count_down(); }, &fetched) != 0)
        throw sinew::error("starpu_data_acquire_cb failed");
    fetched.wait();
    for (auto h : out) starpu_data_release(h);
  }

  /// Runs `write` with every block acquired for the host in read-write
  /// mode: the host's copy becomes the only valid one, as if it had just
  /// written new data, so the next tasks transfer their inputs again.
  template <class F>
  void host_writes(const F& write) const {
    for (std::size_t k = 0; k < h_.size(); ++k)
      for (unsigned b = 0; b < blocks_; ++b) starpu_data_acquire(block(k, b), STARPU_RW);
    write();
    for (std::size_t k = 0; k < h_.size(); ++k)
      for (unsigned b = 0; b < blocks_; ++b) starpu_data_release(block(k, b));
  }

 private:
  starpu_data_handle_t block(std::size_t k, unsigned b) const { return starpu_data_get_sub_data(h_[k], 1, b); }

  std::vector<starpu_array> arrays_;
  std::vector<starpu_data_handle_t> h_;
  unsigned blocks_;
};

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

/// Sinew's balanced map (see sinew_devices) and its graph, on a
/// tbb_scheduler of its own or, with 0 workers, the default scheduler.
struct sinew_map {
  std::unique_ptr<sinew::tbb_scheduler> sched;
  sinew::node m;
  sinew::graph g;
  sinew_map(std::unique_ptr<sinew::tbb_scheduler> s, sinew::node n)
      : sched(std::move(s)), m(std::move(n)), g(m, {.scheduler = sched.get()}) {}
};

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

/// A factory of Sinew's balanced map on `workers` host workers (0: all).
template <class F>
std::function<std::unique_ptr<sinew_map>(unsigned)> sinew_maker(const std::string& ocl, F f, sinew::map_options mo,
                                                                 scl::kernel_spec k) {
  return [=](unsigned workers) {
    return std::make_unique<sinew_map>(workers ? std::make_unique<sinew::tbb_scheduler>(workers) : nullptr,
                                       sinew::multi_device_map(sinew_devices(ocl, f, mo, k), sinew::balance::iterative()));
  };
}

/// One workload as both runtimes run it.
struct workload {
  std::string key;  ///< RATIO starpu_<key>...
  std::function<std::unique_ptr<sinew_map>(unsigned)> make_sinew;
  std::function<void(sinew::graph&)> sinew_run;  ///< one unit through the graph
  std::vector<starpu_array> arrays;
  std::size_t n = 0;
  unsigned blocks = 1;
  /// Inserts block `first`'s task on its sub-handles.
  std::function<void(const std::vector<starpu_data_handle_t>&, unsigned)> insert;
  std::function<void()> poison;
  std::function<std::string()> check;
};

/// Runs `w.sinew_run` on `s` until its balancer is tuned (real units, untimed).
void tune(sinew_map& s, const workload& w, sb::context& ctx, const std::string& what) {
  for (int runs = 0; !sinew::device_stats(s.m).tuned && runs < 1000; ++runs) {
    w.poison();
    w.sinew_run(s.g);
  }
  auto st = sinew::device_stats(s.m);
  std::string weights;
  for (std::size_t i = 0; i < st.weights.size(); ++i)
    weights += (i ? ", " : "") + st.devices[i] + " " + sb::format_double(st.weights[i], 1) + "%";
  ctx.note(what + ": tuned in " + std::to_string(st.tuning_executions) + " execution(s); weights " + weights);
}

/// Measures one workload: StarPU with OpenCL when there is a GPU (data
/// registered per unit, then once), Sinew on as many host workers as StarPU
/// started CPU workers (and on all, where that is more), then StarPU on CPU
/// workers only when there is a GPU.
void compare(sb::context& ctx, const workload& w, bool gpu) {
  auto ms = [](double s) { return s * 1e3; };
  const int calibration = ctx.smoke() ? 1 : 5;
  ctx.param("starpu_calibration_runs", calibration);
  auto per_unit = [&w] {
    starpu_arrays a(w.arrays, w.n, w.blocks);
    a.submit(w.insert);
    starpu_task_wait_for_all();
  };
  unsigned cpu_workers = 0;
  const sb::series* fresh = nullptr;
  const sb::series* once = nullptr;
  {
    starpu_session session(sb::thread_count(), gpu);
    cpu_workers = starpu_cpu_worker_get_count();
    ctx.param("starpu_workers", starpu_session::workers());
    for (int k = 0; k < calibration; ++k) {
      w.poison();
      per_unit();
    }
    const std::string workers = "StarPU " + starpu_session::workers() + " workers";
    fresh = &ctx.measure({.name = "starpu dmda, registered per unit", .unit = "ms/unit", .better = sb::lower,
                          .setup = w.poison, .run = per_unit, .to_metric = ms, .check = w.check,
                          .note = workers + "; registered, partitioned, unpartitioned, unregistered every unit"});
    starpu_arrays kept(w.arrays, w.n, w.blocks);  // unregistered before the session ends
    once = &ctx.measure({.name = "starpu dmda, registered once", .unit = "ms/unit", .better = sb::lower,
                         .setup = [&] { kept.host_writes(w.poison); },
                         .run = [&] {
                           kept.submit(w.insert);
                           kept.fetch_outputs();
                         },
                         .to_metric = ms, .check = w.check,
                         .note = workers + "; registered once; inputs written anew by the host before each unit"});
  }
  auto sinew = [&](unsigned workers, const std::string& name) -> const sb::series& {
    auto s = w.make_sinew(workers);
    tune(*s, w, ctx, name);
    const unsigned used = workers ? workers : sb::thread_count();
    return ctx.measure({.name = name, .unit = "ms/unit", .better = sb::lower, .setup = w.poison,
                        .run = [&] { w.sinew_run(s->g); }, .to_metric = ms, .check = w.check,
                        .note = std::to_string(used) + " host workers" +
                                (gpu ? " + OpenCL device(s), iterative balancer" : ", host executor")});
  };
  const unsigned same = std::max(1u, cpu_workers);
  ctx.param("sinew_host_workers", same);
  const auto& s = sinew(same, "sinew balanced map, StarPU's host workers");
  const sb::series* all = same < sb::thread_count() ? &sinew(0, "sinew balanced map, all host workers") : nullptr;
  if (gpu) {
    starpu_session session(sb::thread_count(), false);
    ctx.param("starpu_workers_cpu_only", starpu_session::workers());
    for (int k = 0; k < calibration; ++k) {
      w.poison();
      per_unit();
    }
    ctx.measure({.name = "starpu dmda, cpu only", .unit = "ms/unit", .better = sb::lower, .setup = w.poison,
                 .run = per_unit, .to_metric = ms, .check = w.check,
                 .note = "informational: StarPU " + starpu_session::workers() + " workers, registered per unit"});
  }
  auto ratio = [&](const sb::series& a, const sb::series* b) { return a.stats.n && b && b->stats.n && b->stats.median > 0; };
  const std::string on = "sinew on " + std::to_string(same) + " host workers";
  if (ratio(s, fresh))
    ctx.ratio("starpu_" + w.key, s.stats.median / fresh->stats.median, 1.0, sb::lower,
              on + " ms / StarPU dmda registered per unit ms (medians)");
  if (ratio(s, once))
    ctx.ratio("starpu_" + w.key + "_registered_once", s.stats.median / once->stats.median, 1.0, sb::lower,
              on + " ms / StarPU dmda registered once ms (medians)");
  if (all && ratio(*all, fresh))
    ctx.informational_ratio("starpu_" + w.key + "_all_workers", all->stats.median / fresh->stats.median, 1.0, sb::lower,
                            "lopsided: Sinew on " + std::to_string(sb::thread_count()) + " host workers, StarPU on " +
                                std::to_string(cpu_workers) + " CPU workers",
                            "sinew on all host workers ms / StarPU dmda registered per unit ms (medians)");
}

unsigned blocks_for(std::size_t n, unsigned want) { return unsigned(std::max<std::size_t>(1, std::min<std::size_t>(n, want))); }

void run_series(sb::context& ctx) {
  fresh_starpu_home();
  const std::size_t n = ctx.smoke() ? 256 : ctx.quick() ? 2000 : 10000;
  const int steps = 1000;
  const std::string ocl = opencl_kind();
  ctx.param("coefficients", n);
  const std::vector<wl::coeff> ref = wl::series_reference(n, steps);
  std::vector<std::vector<wl::coeff>> out;  // Sinew's result
  std::vector<wl::coeff> flat(n);           // StarPU's
  starpu_kernel k("sinew_bench_series", series_cpu, series_opencl, 1, {STARPU_W});
  workload w;
  w.key = "series";
  w.make_sinew = sinew_maker(ocl, wl::series{steps}, {.min_task = 1},
                             spec("series.cl", "series", {scl::arg::output<wl::coeff>(), scl::arg::scalar<int>(steps),
                                                          scl::arg::count()}));
  w.sinew_run = [&](sinew::graph& g) { g.run(wl::series_source(n), sinew::into(out)).get(); };
  w.arrays = {{flat.data(), sizeof(wl::coeff), true}};
  w.n = n;
  w.blocks = blocks_for(n, 100);
  w.insert = [&](const std::vector<starpu_data_handle_t>& sub, unsigned first) {
    submit_or_throw(starpu_task_insert(&k.cl, STARPU_W, sub[0], STARPU_VALUE, &first, sizeof(first), STARPU_VALUE,
                                       &steps, sizeof(steps), 0),
                    "series");
  };
  w.poison = [&] {
    out.clear();
    std::fill(flat.begin(), flat.end(), wl::coeff{-1.0, -1.0});
  };
  w.check = [&]() -> std::string {
    const std::vector<wl::coeff>& got = out.size() == 1 ? out[0] : flat;  // poison() emptied `out`
    if (got.size() != n) return "series: no result";
    // OpenCL's pow/cos/sin may differ in the last bits from glibc's.
    auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::fabs(y) + 1e-14; };
    for (std::size_t i = 0; i < n; ++i)
      if (!close(got[i].a, ref[i].a) || !close(got[i].b, ref[i].b))
        return "series coefficient " + std::to_string(i) + " differs from the sequential reference";
    return {};
  };
  ctx.param("starpu_blocks", w.blocks);
  compare(ctx, w, !ocl.empty());
}

void run_saxpy(sb::context& ctx) {
  fresh_starpu_home();
  const std::size_t n = ctx.smoke() ? 1'000'000 : ctx.quick() ? 4'000'000 : 32'000'000;
  const float a = 2.5f;
  const std::string ocl = opencl_kind();
  ctx.param("elements", n);
  wl::saxpy_inputs in = wl::make_saxpy_inputs(n, 7);
  std::vector<float> z(n);
  starpu_kernel k("sinew_bench_saxpy", saxpy_cpu, saxpy_opencl, 3, {STARPU_R, STARPU_R, STARPU_W});
  workload w;
  w.key = "saxpy";
  w.make_sinew = sinew_maker(ocl, wl::saxpy{a}, {},
                             spec("saxpy.cl", "saxpy", {scl::arg::input<float>(), scl::arg::input<float>(),
                                                        scl::arg::output<float>(), scl::arg::scalar(a), scl::arg::count()}));
  w.sinew_run = [&](sinew::graph& g) { g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); };
  w.arrays = {{in.x.data(), sizeof(float), false}, {in.y.data(), sizeof(float), false}, {z.data(), sizeof(float), true}};
  w.n = n;
  w.blocks = 64;
  w.insert = [&](const std::vector<starpu_data_handle_t>& sub, unsigned) {
    submit_or_throw(starpu_task_insert(&k.cl, STARPU_R, sub[0], STARPU_R, sub[1], STARPU_W, sub[2], STARPU_VALUE, &a,
                                       sizeof(a), 0),
                    "saxpy");
  };
  w.poison = [&] { std::fill(z.begin(), z.end(), -7.0f); };
  w.check = [&]() -> std::string {
    for (std::size_t i = 0; i < n; ++i)  // -march=native may contract one variant into an FMA
      if (!(std::fabs(z[i] - (a * in.x[i] + in.y[i])) <= 1e-6f * std::fabs(a * in.x[i] + in.y[i]) + 1e-7f))
        return "z[" + std::to_string(i) + "] is wrong";
    return {};
  };
  ctx.param("starpu_blocks", w.blocks);
  compare(ctx, w, !ocl.empty());
}

const sb::registrar reg_series("starpu_series",
                               "Series (10000 coefficients, quick 2000): Sinew balanced multi-device map on StarPU's "
                               "number of host workers vs StarPU dmda, data registered per unit and once (100 blocks; "
                               "OpenCL codelet when StarPU sees a GPU)",
                               run_series);
const sb::registrar reg_saxpy("starpu_saxpy",
                              "saxpy (32M floats, quick 4M): Sinew balanced multi-device map on StarPU's number of "
                              "host workers vs StarPU dmda, data registered per unit and once (64 blocks; OpenCL "
                              "codelet when StarPU sees a GPU)",
                              run_saxpy);

}  // namespace
