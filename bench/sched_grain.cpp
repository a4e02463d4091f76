// sched_grain: how well each scheduling policy scales independent tasks of
// a given grain. Tasks of 0.5, 5 and 50 us of busy work (sb::burn, a
// register multiply-add chain calibrated once to the requested duration) are all
// submitted from the main thread through a task group, which then waits.
// Every policy runs the same tasks with all its workers and with one; the
// speedup is the 1-worker time over the N-worker time (same policy), the
// efficiency speedup / N. The peer is oneTBB: tbb::task_group in the peers'
// arena vs in a tbb::task_arena(1).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

/// One task's work (sb::burn: the same on every core and every run).
void spin(std::uint32_t iters) { sb::do_not_optimize(sb::burn(1.5f, iters)); }

std::unique_ptr<sinew::scheduler> make_policy(const std::string& p, unsigned threads) {
  return sinew::make_scheduler(p, {.threads = threads});
}

struct grain {
  const char* label;  // in RATIO names
  double us;
};

void run(sb::context& ctx) {
  const unsigned threads = sb::thread_count();
  // Work per run: full sizes ~0.2 s per N-worker run (the 1-worker runs
  // take N times as long); --quick ~0.05 s per 1-worker run, so that the
  // whole benchmark stays under 30 s on 16 workers (8 series of 6 runs per
  // grain; it took 35 s there at 0.1 s per 1-worker run, the N-worker runs
  // of a slow policy taking longer than its 1-worker runs) while an N-worker
  // run still gives each of 16 workers ~60 tasks of 50 us.
  const double target_s = ctx.quick() ? 0.05 / double(threads) : 0.2;  // per N-worker run
  const double ipu = sb::burn_rounds_per_us();
  const grain grains[] = {{"500ns", 0.5}, {"5us", 5.0}, {"50us", 50.0}};
  ctx.param("threads", threads);
  ctx.param("burn_rounds_per_us", sb::format_double(ipu, 1));
  ctx.param("target_seconds_per_run", sb::format_double(target_s, 4));
  ctx.note("tasks per grain: enough for ~" + sb::format_double(target_s, 4) + " s with " + std::to_string(threads) +
           " workers at perfect scaling (the 1-worker runs take " + std::to_string(threads) + "x as long)");

  const char* policies[] = {"tbb", "steal", "deal"};
  for (const grain& g : grains) {
    const std::uint32_t iters = sb::burn_rounds(g.us);
    const std::size_t n = std::max<std::size_t>(
        threads * 4, std::size_t(std::llround(target_s * double(threads) / (g.us * 1e-6))));
    ctx.param(std::string("tasks_") + g.label, n);
    ctx.param(std::string("burn_rounds_") + g.label, iters);
    auto per_task_ns = [n](double s) { return s / double(n) * 1e9; };

    // Sinew: sinew::task_group on the policy; checked with the scheduler's
    // task counter (reset before every run).
    auto sinew_variant = [&](const std::string& p, unsigned workers) -> const sb::series& {
      std::unique_ptr<sinew::scheduler> s = make_policy(p, workers);
      sinew::scheduler* sp = s.get();
      return ctx.measure({.name = std::string(g.label) + ", sinew " + p + " x" + std::to_string(workers),
                          .unit = "ns/task",
                          .better = sb::lower,
                          .setup = [sp] { sp->reset_stats(); },
                          .run =
                              [sp, n, iters] {
                                sinew::task_group tg(*sp);
                                for (std::size_t i = 0; i < n; ++i) tg.run([iters] { spin(iters); });
                                tg.wait();
                              },
                          .to_metric = per_task_ns,
                          // A worker counts a task after it returns, i.e. after the
                          // group's counter let wait() return: poll for a moment.
                          .check = [sp, n]() -> std::string {
                            std::uint64_t ran = 0;
                            for (double t0 = sb::now_seconds(); sb::now_seconds() - t0 < 1.0;) {
                              ran = sp->stats().tasks_run;
                              if (ran >= n) break;
                              std::this_thread::yield();
                            }
                            if (ran == n) return {};
                            return std::to_string(ran) + " tasks ran, expected " + std::to_string(n);
                          },
                          .note = p + " policy, " + std::to_string(sp->concurrency()) + " worker(s)"});
    };
    // oneTBB: tbb::task_group in an arena of `workers` slots (the main thread
    // submits, then joins the work in tg.wait()).
    auto tbb_variant = [&](tbb::task_arena& arena, unsigned workers) -> const sb::series& {
      return ctx.measure({.name = std::string(g.label) + ", tbb::task_group x" + std::to_string(workers),
                          .unit = "ns/task",
                          .better = sb::lower,
                          .setup = nullptr,
                          .run =
                              [&arena, n, iters] {
                                arena.execute([&] {
                                  tbb::task_group tg;
                                  for (std::size_t i = 0; i < n; ++i) tg.run([iters] { spin(iters); });
                                  tg.wait();
                                });
                              },
                          .to_metric = per_task_ns,
                          .check = nullptr,
                          .note = workers == 1 ? "tbb::task_arena(1)" : "peers' arena"});
    };

    struct speedups {
      std::string name;
      double speedup;
      double many_ns;  // median ns/task with all workers
    };
    std::vector<speedups> su;
    auto add = [&](const std::string& name, const sb::series& many, const sb::series& one) {
      double s = (many.stats.n && one.stats.n) ? one.stats.median / many.stats.median : 0.0;
      su.push_back({name, s, many.stats.median});
    };
    for (const char* p : policies) {
      const auto& many = sinew_variant(p, threads);
      const auto& one = sinew_variant(p, 1);
      add(p, many, one);
    }
    {
      const auto& many = tbb_variant(sb::peer_arena(), threads);
      tbb::task_arena one_thread(1);
      const auto& one = tbb_variant(one_thread, 1);
      add("oneTBB", many, one);
      if (one.stats.n)
        ctx.note(std::string("grain ") + g.label + ": " + std::to_string(n) + " tasks, " + std::to_string(iters) +
                 " burn rounds each; measured on oneTBB x1: " +
                 sb::format_double(one.stats.median / 1e3, 3) + " us per task (work + overhead)");
    }
    std::string line = std::string("grain ") + g.label + ": speedup over 1 worker (efficiency):";
    for (const auto& s : su)
      line += " " + s.name + " " + sb::format_double(s.speedup, 2) + " (" +
              sb::format_double(s.speedup / double(threads), 2) + ")";
    ctx.note(line);
    std::string abs = std::string("grain ") + g.label + ": ns/task with " + std::to_string(threads) +
                      " workers relative to oneTBB's (informational, includes the per-task overhead):";
    for (std::size_t k = 0; k + 1 < su.size(); ++k)
      abs += " " + su[k].name + " " +
             sb::format_double(su.back().many_ns > 0 ? su[k].many_ns / su.back().many_ns : 0.0, 2);
    ctx.note(abs);
    const double peer = su.back().speedup;
    for (std::size_t k = 0; k + 1 < su.size(); ++k)
      ctx.ratio(std::string("sched_grain_") + su[k].name + "_" + g.label, peer > 0 ? su[k].speedup / peer : 0.0,
                0.9, sb::higher,
                "sinew " + su[k].name + " speedup " + sb::format_double(su[k].speedup, 3) + " / oneTBB speedup " +
                    sb::format_double(peer, 3) + ", grain " + g.label + " (medians)");
  }
}

const sb::registrar reg("sched_grain",
                        "independent tasks of 0.5/5/50 us from the main thread: speedup over 1 worker of "
                        "Sinew's tbb/steal/deal policies vs oneTBB task_group",
                        run);

}  // namespace
