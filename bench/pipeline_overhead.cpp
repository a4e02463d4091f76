// pipeline_overhead: cost per unit of a 3-stage streaming pipeline whose
// stages do (almost) nothing, one float per unit. Measures the runtime's
// per-unit overhead: queues, stage activation, unit allocation and hand-off.
//
// Every variant does the same work: a serial source produces value(i) for
// i < N, three serial stages add 1, a serial sink sums the results (checked).
#include <cmath>
#include <cstdio>
#include <string>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

constexpr std::size_t kCapacity = 64;  // queue capacity / live tokens / limiter threshold

/// In-place per-element leaf: trivial, but its result is observed by the sink.
struct Nop {
  void operator()(float& x) const { x += 1.0f; }
};

inline float value(std::size_t i) { return float(i & 1023) + 1.0f; }  // never zero

double expected_sum(std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(value(i)) + 3.0;
  return s;
}

std::string check_sum(double got, double want) {
  if (got == want) return {};
  char b[128];
  std::snprintf(b, sizeof b, "sink sum %.1f, expected %.1f", got, want);
  return b;
}

void run(sb::context& ctx) {
  const std::size_t n = ctx.quick() ? 200'000 : 2'000'000;
  const double want = expected_sum(n);
  ctx.param("units", n);
  ctx.param("elements_per_unit", 1);
  ctx.param("stages", 3);
  ctx.param("capacity", kCapacity);
  ctx.param("threads", sb::thread_count());
  auto per_unit_ns = [n](double s) { return s / double(n) * 1e9; };

  // ---- Sinew: pipeline of three in-place maps, generator source, summing sink.
  sinew::scheduler& sched = sinew::default_scheduler();
  sinew::graph g(sinew::pipeline(sinew::map<Nop>(), sinew::map<Nop>(), sinew::map<Nop>()),
                 sinew::graph_options{.scheduler = &sched, .capacity = kCapacity});
  double sinew_sum = 0;
  sinew::run_stats last_stats;
  auto sinew_run_mode = [&](sinew::source_mode mode) {
    sinew_sum = 0;
    auto src = sinew::generate(
        [n](sinew::unit_builder& b) {
          if (b.seq() >= n) return false;
          b.set_shape(sinew::shape::d1(1));
          auto v = b.add<float>();
          v[0] = value(b.seq());
          return true;
        },
        mode);
    auto snk = sinew::for_each([&](const sinew::work_unit& u) { sinew_sum += u.input<float>(0)[0]; });
    auto f = g.run(std::move(src), std::move(snk));
    f.get();
    last_stats = f.stats();
  };
  auto sinew_run = [&] { sinew_run_mode(sinew::source_mode::task); };
  const auto& s_sinew = ctx.measure({.name = "sinew",
                                     .unit = "ns/unit",
                                     .better = sb::lower,
                                     .setup = nullptr,
                                     .run = sinew_run,
                                     .to_metric = per_unit_ns,
                                     .check = [&] { return check_sum(sinew_sum, want); },
                                     .note = "pipeline(3 x map<Nop>), generate -> for_each"});
  ctx.measure({.name = "sinew (source thread)",
               .unit = "ns/unit",
               .better = sb::lower,
               .setup = nullptr,
               .run = [&] { sinew_run_mode(sinew::source_mode::thread); },
               .to_metric = per_unit_ns,
               .check = [&] { return check_sum(sinew_sum, want); },
               .note = "informational: generate(..., source_mode::thread)"});

  // ---- The same graph on a scheduler of one worker (no cross-core
  // hand-off: the runtime's bookkeeping alone), against parallel_pipeline
  // on one thread.
  sinew::tbb_scheduler one_worker(1);
  sinew::graph g1(sinew::pipeline(sinew::map<Nop>(), sinew::map<Nop>(), sinew::map<Nop>()),
                  sinew::graph_options{.scheduler = &one_worker, .capacity = kCapacity});
  const auto& s_sinew1 = ctx.measure({.name = "sinew, 1 worker",
               .unit = "ns/unit",
               .better = sb::lower,
               .setup = nullptr,
               .run =
                   [&] {
                     sinew_sum = 0;
                     auto src = sinew::generate([n](sinew::unit_builder& b) {
                       if (b.seq() >= n) return false;
                       b.set_shape(sinew::shape::d1(1));
                       auto v = b.add<float>();
                       v[0] = value(b.seq());
                       return true;
                     });
                     g1.run(std::move(src), sinew::for_each([&](const sinew::work_unit& u) {
                         sinew_sum += u.input<float>(0)[0];
                       })).get();
                   },
               .to_metric = per_unit_ns,
               .check = [&] { return check_sum(sinew_sum, want); },
               .note = "tbb_scheduler(1), no cross-core hand-off"});

  // ---- oneTBB flow graph: input_node -> limiter_node(64) -> 3 serial function_nodes -> serial sink.
  double fg_sum = 0;
  auto flow_graph_run = [&](bool limited) {
    fg_sum = 0;
    namespace fl = tbb::flow;
    fl::graph fg;
    std::size_t i = 0;
    fl::input_node<float> src(fg, [&](tbb::flow_control& fc) -> float {
      if (i >= n) {
        fc.stop();
        return 0.0f;
      }
      return value(i++);
    });
    fl::limiter_node<float> limit(fg, kCapacity);
    auto stage = [](float x) { return x + 1.0f; };
    fl::function_node<float, float> f1(fg, fl::serial, stage), f2(fg, fl::serial, stage), f3(fg, fl::serial, stage);
    fl::function_node<float, fl::continue_msg> out(fg, fl::serial, [&](float x) {
      fg_sum += x;
      return fl::continue_msg();
    });
    if (limited) {
      fl::make_edge(src, limit);
      fl::make_edge(limit, f1);
      fl::make_edge(out, limit.decrementer());
    } else {
      fl::make_edge(src, f1);
    }
    fl::make_edge(f1, f2);
    fl::make_edge(f2, f3);
    fl::make_edge(f3, out);
    src.activate();
    fg.wait_for_all();
  };
  const auto& s_fg = ctx.measure({.name = "tbb flow graph",
                                  .unit = "ns/unit",
                                  .better = sb::lower,
                                  .setup = nullptr,
                                  .run = [&] { sb::peer_arena().execute([&] { flow_graph_run(true); }); },
                                  .to_metric = per_unit_ns,
                                  .check = [&] { return check_sum(fg_sum, want); },
                                  .note = "input_node -> limiter_node(64) -> 3 serial function_nodes -> sink"});
  ctx.measure({.name = "tbb flow graph (no limiter)",
               .unit = "ns/unit",
               .better = sb::lower,
               .setup = nullptr,
               .run = [&] { sb::peer_arena().execute([&] { flow_graph_run(false); }); },
               .to_metric = per_unit_ns,
               .check = [&] { return check_sum(fg_sum, want); },
               .note = "informational: unbounded queues"});

  // ---- oneTBB parallel_pipeline: 64 live tokens, all filters serial_in_order.
  double pp_sum = 0;
  auto pp_run = [&] {
    pp_sum = 0;
    std::size_t i = 0;
    constexpr auto mode = tbb::filter_mode::serial_in_order;
    auto stage = [](float x) { return x + 1.0f; };
    tbb::parallel_pipeline(kCapacity,
                           tbb::make_filter<void, float>(mode,
                                                         [&](tbb::flow_control& fc) -> float {
                                                           if (i >= n) {
                                                             fc.stop();
                                                             return 0.0f;
                                                           }
                                                           return value(i++);
                                                         }) &
                               tbb::make_filter<float, float>(mode, stage) &
                               tbb::make_filter<float, float>(mode, stage) &
                               tbb::make_filter<float, float>(mode, stage) &
                               tbb::make_filter<float, void>(mode, [&](float x) { pp_sum += x; }));
  };
  const auto& s_pp = ctx.measure({.name = "tbb parallel_pipeline",
                                  .unit = "ns/unit",
                                  .better = sb::lower,
                                  .setup = nullptr,
                                  .run = [&] { sb::peer_arena().execute(pp_run); },
                                  .to_metric = per_unit_ns,
                                  .check = [&] { return check_sum(pp_sum, want); },
                                  .note = "64 tokens, 5 serial_in_order filters"});

  tbb::task_arena one_thread(1);
  const auto& s_pp1 = ctx.measure({.name = "tbb parallel_pipeline, 1 thread",
               .unit = "ns/unit",
               .better = sb::lower,
               .setup = nullptr,
               .run = [&] { one_thread.execute(pp_run); },
               .to_metric = per_unit_ns,
               .check = [&] { return check_sum(pp_sum, want); },
               .note = "task_arena(1)"});

  // ---- What the last Sinew run looked like (one run, not a statistic).
  if (s_sinew.stats.n) {
    std::string st = "sinew last run: units_alive_max=" + std::to_string(last_stats.units_alive_max) +
                     " capacity_total=" + std::to_string(last_stats.capacity_total) + "; per stage (activations, "
                     "units/activation, input high-water):";
    for (const auto& s : last_stats.stages) {
      double upa = s.activations ? double(s.units) / double(s.activations) : 0.0;
      st += " [" + s.path + ": " + std::to_string(s.activations) + ", " + sb::format_double(upa, 2) + ", " +
            std::to_string(s.high_water) + "]";
    }
    ctx.note(st);
    sched.reset_stats();
    sinew_run();
    auto ss = sched.stats();
    std::string w;
    for (std::size_t k = 0; k < ss.workers.size(); ++k) {
      if (k) w += ' ';
      if (k + 1 == ss.workers.size()) w += "outside";
      else w.append(1, 'w').append(std::to_string(k));
      w += '=';
      w += std::to_string(ss.workers[k].tasks);
    }
    ctx.note("sinew scheduler (one run): tasks_submitted=" + std::to_string(ss.tasks_submitted) + " (" +
             sb::format_double(double(ss.tasks_submitted) / double(n), 3) + " per unit), tasks per worker: " + w +
             " (the generate() source runs as scheduler tasks, source_mode::task)");
  }

  ctx.ratio("pipeline_overhead", s_sinew.stats.median / s_pp.stats.median, 0.5, sb::lower,
            "sinew ns/unit / parallel_pipeline ns/unit (medians)");
  if (s_sinew1.stats.n && s_pp1.stats.n)
    ctx.ratio("pipeline_overhead_1thread", s_sinew1.stats.median / s_pp1.stats.median, 1.0, sb::lower,
              "sinew on tbb_scheduler(1) ns/unit / parallel_pipeline in task_arena(1) ns/unit (medians)");
  ctx.informational_ratio("pipeline_overhead_vs_flow_graph", s_sinew.stats.median / s_fg.stats.median, 1.0, sb::lower,
                          "the flow graph is a second reference; the target is pipeline_overhead",
                          "sinew ns/unit / flow graph (limiter 64) ns/unit (medians)");
}

const sb::registrar reg("pipeline_overhead",
                        "3 empty stages, 1 float per unit, 2M units (quick 200k): ns/unit of Sinew vs oneTBB "
                        "flow graph and parallel_pipeline",
                        run);

}  // namespace
