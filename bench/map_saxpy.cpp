// map_saxpy: z = a*x + y over one large unit (memory-bandwidth bound).
// Sinew's map<Saxpy> over one unit vs the same loop under tbb::parallel_for,
// plus informational baselines: a STREAM-like triad under OpenMP (the
// hardware bound) and a single-threaded loop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <sinew/sinew.hpp>

#if defined(SINEW_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

constexpr float kA = 3.0f;
constexpr double kBytesPerElement = 12.0;  // read x, read y, write z (4 bytes each)

struct Saxpy {
  float a;
  void operator()(float x, float y, float* z) const { *z = a * x + y; }
};

float x_init(std::size_t i) { return 1.0f + float(i % 1000) * 0.001f; }
float y_init(std::size_t i) { return 2.0f - float(i % 977) * 0.001f; }
float z_poison(std::size_t) { return -1.0f; }

void run(sb::context& ctx) {
  const std::size_t n = ctx.quick() ? 10'000'000 : 50'000'000;
  ctx.param("elements", n);
  ctx.param("bytes_per_element", 12);
  ctx.param("footprint_MB", sb::format_double(double(n) * kBytesPerElement / 1e6, 0));
  ctx.param("threads", sb::thread_count());

  std::vector<float> x(n), y(n), z(n);  // z preallocated: into_arrays does not resize
  sb::parallel_first_touch(x, x_init);
  sb::parallel_first_touch(y, y_init);
  sb::parallel_first_touch(z, z_poison);

  auto gbs = [n](double s) { return kBytesPerElement * double(n) / s / 1e9; };
  // Untimed before every run: z = -1, so that the check sees this run's output.
  // Serial on purpose: a TBB loop here would leave the TBB workers in the
  // peers' arena, and every variant should start from the same idle state.
  auto poison = [&] { std::fill(z.begin(), z.end(), -1.0f); };
  auto check = [&]() -> std::string {
    for (std::size_t k = 0; k <= 1000; ++k) {
      std::size_t i = k == 1000 ? n - 1 : k * (n / 1000);
      float want = kA * x[i] + y[i];
      if (!(std::fabs(z[i] - want) <= 1e-5f * std::fabs(want))) {
        char b[128];
        std::snprintf(b, sizeof b, "z[%zu] = %g, expected %g", i, double(z[i]), double(want));
        return b;
      }
    }
    return {};
  };

  // ---- Sinew: one unit, map<Saxpy> split over the scheduler's workers.
  sinew::scheduler& sched = sinew::default_scheduler();
  sinew::graph g(sinew::map<Saxpy>({kA}), sinew::graph_options{.scheduler = &sched});
  auto sinew_run = [&] { g.run(sinew::from_arrays(x, y), sinew::into_arrays(z)).get(); };
  const auto& s_sinew = ctx.measure({.name = "sinew map<Saxpy>",
                                     .unit = "GB/s",
                                     .better = sb::higher,
                                     .setup = poison,
                                     .run = sinew_run,
                                     .to_metric = gbs,
                                     .check = check,
                                     .note = "from_arrays(x, y) -> into_arrays(z)"});

  // ---- oneTBB: the same loop under tbb::parallel_for (default partitioner).
  auto tbb_run = [&] {
    const float* xp = x.data();
    const float* yp = y.data();
    float* zp = z.data();
    const float a = kA;
    sb::peer_arena().execute([=] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), [=](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t i = r.begin(); i < r.end(); ++i) zp[i] = a * xp[i] + yp[i];
      });
    });
  };
  const auto& s_tbb = ctx.measure({.name = "tbb::parallel_for",
                                   .unit = "GB/s",
                                   .better = sb::higher,
                                   .setup = poison,
                                   .run = tbb_run,
                                   .to_metric = gbs,
                                   .check = check,
                                   .note = "blocked_range, auto_partitioner"});

  // ---- Informational: one thread, plain loop.
  auto serial_run = [&] {
    const float* xp = x.data();
    const float* yp = y.data();
    float* zp = z.data();
    const float a = kA;
    for (std::size_t i = 0; i < n; ++i) zp[i] = a * xp[i] + yp[i];
  };
  ctx.measure({.name = "serial loop (1 thread)",
               .unit = "GB/s",
               .better = sb::higher,
               .setup = poison,
               .run = serial_run,
               .to_metric = gbs,
               .check = check,
               .note = "informational"});

#if defined(SINEW_BENCH_HAVE_OPENMP)
  // ---- Informational: STREAM-like triad under OpenMP (last: its idle threads
  // spin for a while after each region, which would disturb the others).
  auto omp_run = [&] {
    const float* xp = x.data();
    const float* yp = y.data();
    float* zp = z.data();
    const float a = kA;
    const long nn = long(n);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; ++i) zp[i] = a * xp[i] + yp[i];
  };
  ctx.measure({.name = "openmp triad",
               .unit = "GB/s",
               .better = sb::higher,
               .setup = poison,
               .run = omp_run,
               .to_metric = gbs,
               .check = check,
               .note = "hardware bound (informational), schedule(static), " +
                       std::to_string(omp_get_max_threads()) + " threads"});
#else
  ctx.note("OpenMP not found at build time: no hardware-bound triad");
#endif

  // ---- How Sinew spread the work (one run, not a statistic).
  if (s_sinew.stats.n) {
    poison();
    sched.reset_stats();
    sinew_run();
    auto ss = sched.stats();
    std::string w;
    unsigned used = 0;
    for (std::size_t k = 0; k < ss.workers.size(); ++k) {
      if (k) w += ' ';
      if (k + 1 == ss.workers.size()) w += "outside";
      else w.append(1, 'w').append(std::to_string(k));
      w += '=';
      w += std::to_string(ss.workers[k].tasks);
      used += ss.workers[k].tasks > 0;
    }
    ctx.note("sinew scheduler (one run): " + std::to_string(ss.parallel_fors) + " parallel_for, tasks+chunks per worker: " +
             w + " -> " + std::to_string(used) + " thread(s) did work, load balance " +
             sb::format_double(ss.load_balance(), 2));
  }

  ctx.ratio("map_saxpy", s_sinew.stats.median / s_tbb.stats.median, 0.95, sb::higher,
            "sinew GB/s / tbb::parallel_for GB/s (medians)");
}

const sb::registrar reg("map_saxpy",
                        "z = a*x + y over 50M floats (quick 10M) as one unit: GB/s of Sinew map vs tbb::parallel_for "
                        "(+ OpenMP triad, serial)",
                        run);

}  // namespace
