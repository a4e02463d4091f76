// stream_triad: the STREAM "triad" a[i] = b[i] + s*c[i] over doubles
// (McCalpin's STREAM benchmark, https://www.cs.virginia.edu/stream/): the
// memory bandwidth this machine sustains, i.e. the hardware limit that the
// memory-bound benchmarks (saxpy in `workloads`, `map_saxpy`) are compared
// with. Counted as STREAM counts it: 24 bytes per element (two reads, one
// write; the write-allocate read is not counted), the same convention as the
// 12 bytes per saxpy element. The best parallel median is recorded as
// `stream_triad_GBps` in the JSON machine description.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#if defined(SINEW_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

#include "bench.hpp"
#include "triad.hpp"

namespace sinew_bench {

namespace {

constexpr double kScalar = 3.0;
constexpr double kBytesPerElement = 24.0;
double g_best_gbs = 0;  // best parallel triad median of this process

/// Arrays of one triad run: b and c never zero (b[i] in [1, 2), c[i] in [0.5, 1.5)).
struct triad_arrays {
  std::vector<double> a, b, c;
  explicit triad_arrays(std::size_t n) : a(n), b(n), c(n) {
    // Pages first touched by the threads of the parallel loops (static partition).
    peer_arena().execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, n),
          [&](const tbb::blocked_range<std::size_t>& r) {
            for (std::size_t i = r.begin(); i < r.end(); ++i) {
              a[i] = -1.0;
              b[i] = 1.0 + double(i % 1024) / 1024.0;
              c[i] = 0.5 + double(i % 999) / 999.0;
            }
          },
          tbb::static_partitioner());
    });
  }
  void poison() { std::fill(a.begin(), a.end(), -1.0); }
  /// "" when a == b + s*c at 1001 sampled indices (exact: same expression).
  std::string check() const {
    const std::size_t n = a.size();
    for (std::size_t k = 0; k <= 1000; ++k) {
      std::size_t i = k == 1000 ? n - 1 : k * (n / 1000);
      double want = b[i] + kScalar * c[i];
      if (!(std::fabs(a[i] - want) <= 1e-12 * std::fabs(want))) {
        char m[128];
        std::snprintf(m, sizeof m, "a[%zu] = %g, expected %g", i, a[i], want);
        return m;
      }
    }
    return {};
  }
  void run_tbb() {
    double* ap = a.data();
    const double* bp = b.data();
    const double* cp = c.data();
    const std::size_t n = a.size();
    peer_arena().execute([=] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, n),
          [=](const tbb::blocked_range<std::size_t>& r) {
            for (std::size_t i = r.begin(); i < r.end(); ++i) ap[i] = bp[i] + kScalar * cp[i];
          },
          tbb::static_partitioner());
    });
  }
#if defined(SINEW_BENCH_HAVE_OPENMP)
  void run_omp() {
    double* ap = a.data();
    const double* bp = b.data();
    const double* cp = c.data();
    const long n = long(a.size());
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) ap[i] = bp[i] + kScalar * cp[i];
  }
#endif
};

std::size_t triad_elements(const context& ctx) {
  // Full: 3 x 160 MB, far beyond any last-level cache (STREAM asks for 4x).
  return ctx.smoke() ? (1u << 20) : ctx.quick() ? (8u << 20) : (20u << 20);
}

void run(context& ctx) {
  const std::size_t n = triad_elements(ctx);
  ctx.param("elements", n);
  ctx.param("bytes_per_element", 24);
  ctx.param("footprint_MB", format_double(double(n) * kBytesPerElement / 1e6, 0));
  ctx.param("threads", thread_count());
  triad_arrays t(n);
  auto gbs = [n](double s) { return kBytesPerElement * double(n) / s / 1e9; };
  const auto& s_tbb = ctx.measure({.name = "tbb::parallel_for triad",
                                   .unit = "GB/s",
                                   .better = higher,
                                   .setup = [&] { t.poison(); },
                                   .run = [&] { t.run_tbb(); },
                                   .to_metric = gbs,
                                   .check = [&] { return t.check(); },
                                   .note = "static_partitioner"});
  ctx.measure({.name = "serial triad (1 thread)",
               .unit = "GB/s",
               .better = higher,
               .setup = [&] { t.poison(); },
               .run =
                   [&] {
                     for (std::size_t i = 0; i < n; ++i) t.a[i] = t.b[i] + kScalar * t.c[i];
                   },
               .to_metric = gbs,
               .check = [&] { return t.check(); },
               .note = "informational: what one core gets"});
  double best = s_tbb.stats.median;
#if defined(SINEW_BENCH_HAVE_OPENMP)
  // Last: idle OpenMP threads spin for a while after a parallel region.
  const auto& s_omp = ctx.measure({.name = "openmp triad",
                                   .unit = "GB/s",
                                   .better = higher,
                                   .setup = [&] { t.poison(); },
                                   .run = [&] { t.run_omp(); },
                                   .to_metric = gbs,
                                   .check = [&] { return t.check(); },
                                   .note = "schedule(static), " + std::to_string(omp_get_max_threads()) + " threads"});
  best = std::max(best, s_omp.stats.median);
  if (s_tbb.stats.n && s_omp.stats.n)
    ctx.informational_ratio("stream_triad_tbb_over_omp", s_tbb.stats.median / s_omp.stats.median, 0.95, higher,
                            "both sides are peers, not Sinew", "tbb::parallel_for triad GB/s / OpenMP triad GB/s (medians)");
#else
  ctx.note("OpenMP not found at build time: the limit is the oneTBB triad");
#endif
  if (best > 0) {
    g_best_gbs = std::max(g_best_gbs, best);
    ctx.param("triad_GBps", format_double(g_best_gbs, 2));
    ctx.note("hardware limit used by the other benchmarks: " + format_double(g_best_gbs, 2) +
             " GB/s (best parallel median)");
  }
}

const registrar reg("stream_triad",
                    "STREAM triad a = b + s*c over 20M doubles (quick 8M): GB/s, the memory-bandwidth limit "
                    "(oneTBB and OpenMP, static partition)",
                    run);

}  // namespace

double triad_measured_gbs() { return g_best_gbs; }

double triad_gbs(context& ctx) {
  if (g_best_gbs > 0) return g_best_gbs;
  // Not measured yet in this run: 5 oneTBB triads over the quick size
  // (3 x 64 MB), best median. Untimed by the caller's variants.
  const std::size_t n = ctx.smoke() ? (1u << 20) : (8u << 20);
  triad_arrays t(n);
  t.run_tbb();  // warm-up
  std::vector<double> g;
  for (int k = 0; k < 5; ++k) {
    double t0 = now_seconds();
    t.run_tbb();
    g.push_back(kBytesPerElement * double(n) / (now_seconds() - t0) / 1e9);
  }
  std::string bad = t.check();
  if (!bad.empty()) ctx.error("triad limit: " + bad);
  g_best_gbs = summarize(g).median;
  ctx.note("triad limit measured here (stream_triad did not run before): " + format_double(g_best_gbs, 2) +
           " GB/s (oneTBB, " + std::to_string(n) + " doubles, median of 5)");
  return g_best_gbs;
}

}  // namespace sinew_bench
