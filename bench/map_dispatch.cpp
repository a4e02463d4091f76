// map_dispatch: the `sched_overhead` sweep of [Zhang18, §5, Fig. 11] (
// "the scheduling time from dispatching tasks to their completion" for
// kernels of 1 ... 10^5 work-groups of one work-item each) for Sinew's
// parallel_for: an empty leaf, chunk counts 1, 10, 100, 1000, 10^4, 10^5
// (grain 1), called from the main thread, under each policy (tbb, steal,
// deal; steal and deal use the push dispatch of schedulers/workers/map_dispatch.hpp) and
// oneTBB's parallel_for with a simple_partitioner (one task per chunk) as
// the peer. Metric: microseconds per parallel_for call.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

std::unique_ptr<sinew::scheduler> make_policy(const std::string& p, unsigned threads) {
  if (p == "tbb") return std::make_unique<sinew::tbb_scheduler>(threads);
  if (p == "steal") return std::make_unique<sinew::steal_scheduler>(threads);
  sinew::topology t = sinew::topology::current();
  if (t.nodes() != 1 || t.total_cores() != threads) t = sinew::topology::synthetic(1, threads);
  return std::make_unique<sinew::deal_scheduler>(t);
}

// A check's verdict: the leaves of one call covered `got` of `chunks`.
std::string covered(std::size_t got, std::size_t chunks) {
  if (got == chunks) return {};
  return "the leaves covered " + std::to_string(got) + " of " + std::to_string(chunks) + " chunks";
}

void run(sb::context& ctx) {
  const unsigned threads = sb::thread_count();
  ctx.param("threads", threads);
  const std::vector<std::size_t> sweep = {1, 10, 100, 1000, 10'000, 100'000};
  // Calls per timed run: about the same total number of chunks per size.
  auto calls_for = [&](std::size_t chunks) {
    return std::max<std::size_t>(ctx.quick() ? 4 : 20, (ctx.quick() ? 200'000 : 2'000'000) / (chunks * 10 + 100));
  };
  const char* policies[] = {"tbb", "steal", "deal"};
  std::vector<std::unique_ptr<sinew::scheduler>> scheds;
  for (const char* p : policies) scheds.push_back(make_policy(p, threads));

  std::vector<double> log_ratio(std::size(policies), 0.0);
  int points = 0;
  for (std::size_t chunks : sweep) {
    const std::size_t calls = calls_for(chunks);
    ctx.param("calls_" + std::to_string(chunks), calls);
    auto per_call_us = [calls](double s) { return s / double(calls) * 1e6; };
    std::atomic<std::size_t> sink{0};
    const auto& peer = ctx.measure(
        {.name = std::to_string(chunks) + " chunks, tbb::parallel_for",
         .unit = "us/call",
         .better = sb::lower,
         .setup = nullptr,
         .run =
             [&] {
               sb::peer_arena().execute([&] {
                 for (std::size_t c = 0; c < calls; ++c)
                   tbb::parallel_for(
                       tbb::blocked_range<std::size_t>(0, chunks, 1),
                       [&](const tbb::blocked_range<std::size_t>& r) { sb::do_not_optimize(r.begin()); },
                       tbb::simple_partitioner());
               });
             },
         .to_metric = per_call_us,
         // As the policies' check (below), so that both start their next
         // timed run right after a call of their own.
         .check =
             [&]() -> std::string {
               sink.store(0);
               sb::peer_arena().execute([&] {
                 tbb::parallel_for(
                     tbb::blocked_range<std::size_t>(0, chunks, 1),
                     [&](const tbb::blocked_range<std::size_t>& r) { sink.fetch_add(r.size(), std::memory_order_relaxed); },
                     tbb::simple_partitioner());
               });
               return covered(sink.load(), chunks);
             },
         .note = "simple_partitioner, grain 1: one task per chunk"});
    for (std::size_t k = 0; k < scheds.size(); ++k) {
      sinew::scheduler* s = scheds[k].get();
      const auto& ser = ctx.measure(
          {.name = std::to_string(chunks) + " chunks, sinew " + policies[k],
           .unit = "us/call",
           .better = sb::lower,
           .setup = [s] { s->reset_stats(); },
           // The same leaf as the peer's; no shared counter for the check (at
           // 10^5 chunks its cache line would dominate the time measured).
           .run =
               [&, s] {
                 for (std::size_t c = 0; c < calls; ++c)
                   s->parallel_for(chunks, 1, [](std::size_t b, std::size_t) { sb::do_not_optimize(b); });
               },
           .to_metric = per_call_us,
           // Untimed: one more call whose leaves count what they cover.
           .check =
               [&, s]() -> std::string {
                 sink.store(0);
                 s->parallel_for(chunks, 1, [&](std::size_t b, std::size_t e) {
                   sink.fetch_add(e - b, std::memory_order_relaxed);
                 });
                 return covered(sink.load(), chunks);
               },
           .note = std::string(policies[k]) + " policy"});
      if (ser.stats.n && peer.stats.n) {
        const double r = peer.stats.median / ser.stats.median;
        log_ratio[k] += std::log(r);
        if (k == 0) ++points;
        const auto st = s->stats();
        ctx.note(std::to_string(chunks) + " chunks, " + policies[k] + ": " + sb::format_double(r, 2) +
                 "x oneTBB's speed; last run: " + std::to_string(st.wakeups) + " wake-ups, " +
                 std::to_string(st.parallel_fors_inline) + " of " + std::to_string(st.parallel_fors) +
                 " loops inline, load balance " + sb::format_double(st.load_balance(), 2));
      }
    }
  }
  if (points)
    for (std::size_t k = 0; k < scheds.size(); ++k)
      ctx.ratio(std::string("map_dispatch_") + policies[k], std::exp(log_ratio[k] / points), 1.0, sb::higher,
                "geometric mean over 1..10^5 chunks of t(tbb::parallel_for) / t(sinew " + std::string(policies[k]) +
                    " parallel_for), medians");
}

const sb::registrar reg("map_dispatch",
                        "Zhang18's sched_overhead sweep: parallel_for of 1..10^5 empty chunks from the main thread, "
                        "us per call, Sinew's tbb/steal/deal vs tbb::parallel_for",
                        run);

}  // namespace
