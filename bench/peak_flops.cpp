// peak_flops: the machine's measured peak arithmetic for this build's
// instruction set, the limit compute-bound benchmarks (nbody) are compared
// with, as stream_triad is the limit of memory-bound ones.
//
// Each thread runs 12 independent multiply-add chains on vector registers
// (GCC vector types as wide as the build's ISA: 16 bytes for the default
// x86-64 build, 32 with AVX, 64 with AVX-512), enough independent chains to
// hide the latency of the floating-point units, so the loop is bound by
// their throughput only. a*m + c counts 2 flops per lane (an FMA when the
// build has one). Variants: float and double, all threads (tbb::parallel_for,
// one block per thread, in the peers' arena) and one thread.
//
// The best all-thread float median is this process' peak (peak.hpp); the
// JSON machine description has no field for it, the param `peak_gflops_float`
// and the nbody notes carry it.
#include <algorithm>
#include <cstdio>
#include <string>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include "bench.hpp"
#include "peak.hpp"

namespace {

namespace sb = sinew_bench;

#if defined(__AVX512F__)
constexpr int vec_bytes = 64;
#elif defined(__AVX__)
constexpr int vec_bytes = 32;
#else
constexpr int vec_bytes = 16;
#endif

// (An alias template would drop the vector attribute: one typedef per type.)
template <class T>
struct vec_of;
template <>
struct vec_of<float> {
  typedef float type __attribute__((vector_size(vec_bytes)));
};
template <>
struct vec_of<double> {
  typedef double type __attribute__((vector_size(vec_bytes)));
};
template <class T>
using vec = typename vec_of<T>::type;
constexpr int chains = 12;

/// `iters` rounds of `chains` independent a = a*m + c on vectors of T;
/// returns a value depending on all of them (so nothing is optimised away).
template <class T>
[[gnu::noinline]] T fma_chains(std::size_t iters, T seed) {
  vec<T> a[chains];
  for (int k = 0; k < chains; ++k) a[k] = vec<T>{} + (seed + T(k) * T(0.001));
  const vec<T> m = vec<T>{} + T(0.9999999), c = vec<T>{} + T(1e-7);
  for (std::size_t i = 0; i < iters; ++i)
    for (int k = 0; k < chains; ++k) a[k] = a[k] * m + c;
  T s = 0;
  for (int k = 0; k < chains; ++k)
    for (int l = 0; l < int(vec_bytes / sizeof(T)); ++l) s += a[k][l];
  return s;
}

template <class T>
constexpr double flops_per_iter() {
  return 2.0 * chains * (vec_bytes / sizeof(T));
}

double g_peak_float = 0;

template <class T>
const sb::series& measure_peak(sb::context& ctx, const char* type, unsigned threads, std::size_t iters) {
  const double flops = flops_per_iter<T>() * double(iters) * threads;
  volatile T sink = 0;
  auto run = [&] {
    if (threads == 1) {
      sink = fma_chains<T>(iters, T(1));
      return;
    }
    sb::peer_arena().execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<unsigned>(0, threads, 1),
          [&](const tbb::blocked_range<unsigned>& r) {
            for (unsigned t = r.begin(); t < r.end(); ++t) sb::do_not_optimize(fma_chains<T>(iters, T(1 + t)));
          },
          tbb::static_partitioner());
    });
  };
  std::string name = std::string(type) + (threads == 1 ? ", 1 thread" : ", all threads");
  return ctx.measure({.name = name,
                      .unit = "GFLOP/s",
                      .better = sb::higher,
                      .setup = nullptr,
                      .run = run,
                      .to_metric = [flops](double s) { return flops / s / 1e9; },
                      .check = nullptr,
                      .note = std::to_string(chains) + " chains x " + std::to_string(vec_bytes) + "-byte vectors"});
}

/// Iterations for about `seconds` of work per thread (the loop runs
/// `chains` vector operations per iteration, at roughly 1 per cycle per port).
std::size_t iters_for(double seconds) {
  // Calibrate on one thread: time a short run, scale.
  std::size_t it = 1 << 16;
  for (;;) {
    double t0 = sb::now_seconds();
    sb::do_not_optimize(fma_chains<float>(it, 1.0f));
    double dt = sb::now_seconds() - t0;
    if (dt > 0.01 || it > (std::size_t(1) << 34)) return std::max<std::size_t>(1, std::size_t(double(it) * seconds / dt));
    it *= 4;
  }
}

void run(sb::context& ctx) {
  const unsigned n = sb::thread_count();
  const std::size_t iters = iters_for(ctx.smoke() ? 0.005 : ctx.quick() ? 0.05 : 0.2);
  ctx.param("threads", n);
  ctx.param("vector_bytes", vec_bytes);
  ctx.param("chains", chains);
  ctx.param("iterations_per_thread", iters);
  const auto& f = measure_peak<float>(ctx, "float", n, iters);
  measure_peak<float>(ctx, "float", 1, iters);
  measure_peak<double>(ctx, "double", n, iters);
  measure_peak<double>(ctx, "double", 1, iters);
  if (f.stats.n) {
    g_peak_float = std::max(g_peak_float, f.stats.median);
    ctx.param("peak_gflops_float", sb::format_double(g_peak_float, 2));
  }
}

const sb::registrar reg("peak_flops",
                        "measured peak arithmetic of this build's ISA: 12 independent multiply-add chains per "
                        "thread, float and double, all threads and 1 thread (the limit nbody is compared with)",
                        run);

}  // namespace

namespace sinew_bench {

double peak_gflops_float(context& ctx) {
  if (g_peak_float > 0) return g_peak_float;
  // Not measured yet in this process: a short measurement now.
  const unsigned n = thread_count();
  const std::size_t iters = iters_for(0.05);
  const double flops = flops_per_iter<float>() * double(iters) * n;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    double t0 = now_seconds();
    peer_arena().execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<unsigned>(0, n, 1),
          [&](const tbb::blocked_range<unsigned>& rg) {
            for (unsigned t = rg.begin(); t < rg.end(); ++t) do_not_optimize(fma_chains<float>(iters, float(1 + t)));
          },
          tbb::static_partitioner());
    });
    best = std::max(best, flops / (now_seconds() - t0) / 1e9);
  }
  ctx.note("peak_flops did not run before: measured a short float peak now (best of 5): " + format_double(best, 2) +
           " GFLOP/s");
  g_peak_float = best;
  return best;
}

}  // namespace sinew_bench
