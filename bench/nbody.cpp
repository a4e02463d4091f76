// nbody: the O(N^2) N-Body simulation of [Marques14, §5.1.1], iterated by
// Sinew's `for` skeleton (`workloads::nbody_simulation`: for_loop over
// map<nbody_step>) vs a hand-written oneTBB time-step loop (one
// tbb::parallel_for over the bodies per step, double-buffered, swap).
// Both call the same per-body function (workloads::nbody_advance), so their
// results must equal the sequential reference bit for bit.
//
// RATIO: nbody = Sinew steps/s / oneTBB steps/s (medians), target >= 0.95.
// A note puts both in GFLOP/s (20 flops per interaction) against the
// measured float peak of peak_flops (peak.hpp).
#include <string>
#include <utility>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "bench.hpp"
#include "peak.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;

void run(sb::context& ctx) {
  const std::size_t n = ctx.smoke() ? 256 : ctx.quick() ? 1024 : 4096;
  const std::size_t steps = ctx.smoke() ? 2 : ctx.quick() ? 5 : 10;
  const wl::nbody_step step{};
  ctx.param("bodies", n);
  ctx.param("steps", steps);
  ctx.param("threads", sb::thread_count());
  ctx.param("eps2", sb::format_double(step.eps2, 1));
  ctx.param("dt", sb::format_double(step.dt, 4));

  const wl::nbody_state start = wl::make_bodies(n, 17);
  const wl::nbody_state ref = wl::nbody_reference(start, steps, step);
  std::vector<wl::body> pos;
  std::vector<wl::vel> vel;
  auto steps_per_s = [steps](double s) { return double(steps) / s; };
  auto poison = [&] {
    pos.assign(n, wl::body{-1, -1, -1, -1});
    vel.assign(n, wl::vel{-1, -1, -1, -1});
  };
  auto check = [&]() -> std::string {
    if (pos.size() != n || vel.size() != n) return "wrong number of bodies in the result";
    for (std::size_t i = 0; i < n; ++i)
      if (!(pos[i] == ref.positions[i]) || !(vel[i] == ref.velocities[i]))
        return "body " + std::to_string(i) + " differs from the sequential reference";
    return {};
  };

  // ---- Sinew: for_loop(map<nbody_step>, steps) over one unit.
  wl::nbody_state in = start;  // from_arrays needs non-const arrays
  sinew::graph g(wl::nbody_simulation(steps, step));
  const auto& s_sinew = ctx.measure({.name = "sinew for(map<nbody_step>)",
                                     .unit = "steps/s",
                                     .better = sb::higher,
                                     .setup = poison,
                                     .run =
                                         [&] {
                                           g.run(sinew::from_arrays(in.positions, in.velocities),
                                                 sinew::into_arrays(pos, vel))
                                               .get();
                                         },
                                     .to_metric = steps_per_s,
                                     .check = check,
                                     .note = "workloads::nbody_simulation"});

  // ---- oneTBB: what a user would write by hand.
  std::vector<wl::body> p2(n);
  std::vector<wl::vel> v2(n);
  auto tbb_run = [&] {
    // Step 0 reads the start state; later steps ping-pong between (pos, vel)
    // and (p2, v2); the result ends in (pos, vel).
    pos = start.positions;
    vel = start.velocities;
    sb::peer_arena().execute([&] {
      for (std::size_t s = 0; s < steps; ++s) {
        const wl::body* cp = pos.data();
        const wl::vel* cv = vel.data();
        wl::body* np = p2.data();
        wl::vel* nv = v2.data();
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), [=](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i < r.end(); ++i)
            wl::nbody_advance(i, cp, cv, n, step.eps2, step.dt, np + i, nv + i);
        });
        pos.swap(p2);
        vel.swap(v2);
      }
    });
  };
  const auto& s_tbb = ctx.measure({.name = "tbb::parallel_for per step",
                                   .unit = "steps/s",
                                   .better = sb::higher,
                                   .setup = poison,
                                   .run = tbb_run,
                                   .to_metric = steps_per_s,
                                   .check = check,
                                   .note = "double-buffered, swap per step"});
  ctx.note("interactions per step: " + std::to_string(n * n) + "; sinew " +
           sb::format_double(s_sinew.stats.median * double(n * n) / 1e9, 3) + " G interactions/s");
  // The limit: peak_flops' measured float peak of this build's ISA, at the
  // customary 20 flops per interaction (sqrt and divide count 1 each).
  if (s_sinew.stats.n && s_tbb.stats.n) {
    const double peak = sb::peak_gflops_float(ctx);
    auto gf = [&](const sb::series& s) { return s.stats.median * double(n * n) * 20.0 / 1e9; };
    ctx.param("peak_gflops_float", sb::format_double(peak, 2));
    ctx.note("vs peak: sinew " + sb::format_double(gf(s_sinew), 2) + " GFLOP/s = " +
             sb::format_double(100.0 * gf(s_sinew) / peak, 1) + "%, oneTBB " + sb::format_double(gf(s_tbb), 2) +
             " GFLOP/s = " + sb::format_double(100.0 * gf(s_tbb) / peak, 1) + "% of the measured float peak " +
             sb::format_double(peak, 2) + " GFLOP/s (20 flops per interaction)");
  }
  if (s_sinew.stats.n && s_tbb.stats.n)
    ctx.ratio("nbody", s_sinew.stats.median / s_tbb.stats.median, 0.95, sb::higher,
              "sinew for-skeleton steps/s / hand-written oneTBB loop steps/s (medians)");
}

const sb::registrar reg("nbody",
                        "O(N^2) N-Body, 4096 bodies x 10 steps (quick 1024 x 5): Sinew for skeleton vs a hand-written "
                        "tbb::parallel_for step loop",
                        run);

}  // namespace
