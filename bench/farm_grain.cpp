// farm_grain: a stream of independent items of 0.5, 5 and 50 us of work
// through a Sinew farm vs a oneTBB flow graph function_node with unlimited
// concurrency (what a oneTBB user writes for "apply f to every item in
// parallel"), on 1, 2, 4, ... and all cores. The work is a calibrated
// dependent floating-point chain on the item's value (nothing shared), so
// the numbers show each runtime's per-item cost and how it scales.
//
//   sinew farm xK          graph(farm(map<Burn>, K)) on tbb_scheduler(K); source generate()
//                          (one 1-float unit per item, scheduler tasks), sink for_each storing
//                          the result by sequence number
//   flow graph xK          function_node<size_t, continue_msg>(unlimited) in task_arena(K); the
//                          main thread try_puts every item, then wait_for_all
//
// Metric: kitems/s (higher is better). Speedup = xK / x1 of the same
// runtime, efficiency = speedup / K (notes). Every result is compared with
// the sequential one.
//
// RATIO per grain at all cores: farm_grain_<grain> = sinew kitems/s / flow
// graph kitems/s (medians), target >= 1.0.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

using sb::burn;

/// The farm's leaf: one item's work.
struct Burn {
  std::uint32_t iters = 1;
  void operator()(float x, float* o) const { *o = burn(x, iters); }
};

std::vector<unsigned> core_counts(unsigned all) {
  std::vector<unsigned> v;
  for (unsigned k = 1; k < all; k *= 2) v.push_back(k);
  v.push_back(all);
  return v;
}

std::string grain_name(double us) { return us < 1 ? "500ns" : std::to_string(int(us)) + "us"; }

void run(sb::context& ctx) {
  const unsigned all = sb::thread_count();
  const std::vector<double> grains_us{0.5, 5.0, 50.0};
  // One core's work per run: 0.1 s (quick 0.02 s, smoke 2 ms) whatever the grain.
  const double work_s = ctx.smoke() ? 0.002 : ctx.quick() ? 0.02 : 0.1;
  const std::vector<unsigned> cores = core_counts(all);
  ctx.param("burn_rounds_per_us", sb::format_double(sb::burn_rounds_per_us(), 1));
  ctx.param("work_per_run_1core_s", sb::format_double(work_s, 3));
  std::string cs;
  for (unsigned k : cores) cs += (cs.empty() ? "" : ",") + std::to_string(k);
  ctx.param("cores", cs);

  for (double g_us : grains_us) {
    const std::uint32_t iters = sb::burn_rounds(g_us);
    const std::size_t n = std::max<std::size_t>(64, std::size_t(work_s * 1e6 / g_us));
    const std::string gname = grain_name(g_us);
    ctx.param("items_" + gname, n);
    std::vector<float> in(n), out(n), ref(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = 1.0f + float(i % 100) * 0.01f;
    for (std::size_t i = 0; i < n; ++i) ref[i] = burn(in[i], iters);
    auto kitems = [n](double s) { return double(n) / s / 1e3; };
    auto poison = [&] { std::fill(out.begin(), out.end(), -1.0f); };
    auto check = [&]() -> std::string {
      for (std::size_t i = 0; i < n; ++i)
        if (out[i] != ref[i]) return "item " + std::to_string(i) + " has a wrong result";
      return {};
    };
    std::vector<const sb::series*> sin, fg;
    for (unsigned k : cores) {
      // ---- Sinew farm on k workers.
      sinew::tbb_scheduler sched(k);
      sinew::graph g(sinew::farm(sinew::map<Burn>(Burn{iters}), k), sinew::graph_options{.scheduler = &sched});
      auto sinew_run = [&] {
        auto src = sinew::generate([&](sinew::unit_builder& b) {
          if (b.seq() >= n) return false;
          b.set_shape(sinew::shape::d1(1));
          b.add<float>()[0] = in[b.seq()];
          return true;
        });
        g.run(std::move(src), sinew::for_each([&](const sinew::work_unit& u) { out[u.seq()] = u.input<float>(0)[0]; }))
            .get();
      };
      sin.push_back(&ctx.measure({.name = gname + " sinew farm x" + std::to_string(k),
                                  .unit = "kitems/s",
                                  .better = sb::higher,
                                  .setup = poison,
                                  .run = sinew_run,
                                  .to_metric = kitems,
                                  .check = check,
                                  .note = "farm(map<Burn>, " + std::to_string(k) + "), tbb_scheduler(" +
                                          std::to_string(k) + ")"}));
      // ---- oneTBB flow graph, function_node(unlimited), in an arena of k slots.
      tbb::task_arena arena(int(k), 1);
      auto fg_run = [&] {
        arena.execute([&] {
          tbb::flow::graph fgraph;
          tbb::flow::function_node<std::size_t, tbb::flow::continue_msg> fn(
              fgraph, tbb::flow::unlimited, [&](std::size_t i) {
                out[i] = burn(in[i], iters);
                return tbb::flow::continue_msg();
              });
          for (std::size_t i = 0; i < n; ++i) fn.try_put(i);
          fgraph.wait_for_all();
        });
      };
      fg.push_back(&ctx.measure({.name = gname + " flow graph x" + std::to_string(k),
                                 .unit = "kitems/s",
                                 .better = sb::higher,
                                 .setup = poison,
                                 .run = fg_run,
                                 .to_metric = kitems,
                                 .check = check,
                                 .note = "function_node(unlimited), task_arena(" + std::to_string(k) + ")"}));
    }
    // Speedup and efficiency of each runtime over its own 1-core run.
    auto scaling = [&](const char* who, const std::vector<const sb::series*>& s) {
      if (s.front()->stats.n == 0) return;
      std::string line = gname + " " + who + " speedup (efficiency):";
      for (std::size_t i = 0; i < cores.size(); ++i) {
        if (s[i]->stats.n == 0) continue;
        double sp = s[i]->stats.median / s.front()->stats.median;
        line += " x" + std::to_string(cores[i]) + " " + sb::format_double(sp, 2) + " (" +
                sb::format_double(sp / cores[i], 2) + ")";
      }
      ctx.note(line);
    };
    scaling("sinew farm", sin);
    scaling("flow graph", fg);
    if (sin.back()->stats.n && fg.back()->stats.n)
      ctx.ratio("farm_grain_" + gname, sin.back()->stats.median / fg.back()->stats.median, 1.0, sb::higher,
                "sinew farm kitems/s / flow graph function_node kitems/s at " + std::to_string(all) +
                    " cores (medians)");
  }
}

const sb::registrar reg("farm_grain",
                        "items of 0.5/5/50 us on 1..all cores: Sinew farm vs oneTBB flow graph function_node "
                        "(unlimited); kitems/s, speedup, efficiency",
                        run);

}  // namespace
