// algorithms: sinew/schedulers/algorithms.hpp against oneTBB's algorithms on
// 10^8 elements (--quick 10^7, --smoke 10^5), in elements per second:
//
//  * reduce: sum of doubles (i % 1024, so every order of the sum is exact),
//    sinew::parallel_reduce's index form vs tbb::parallel_reduce, both with
//    the same serial loop per block;
//  * scan: inclusive prefix sums of int64, out of place,
//    sinew::parallel_inclusive_scan vs tbb::parallel_scan;
//  * sort: random uint32 (one fixed sequence, copied back before every run,
//    untimed), sinew::parallel_sort vs tbb::parallel_sort.
//
// Sinew runs under each policy (`make_scheduler(p, {.threads =
// thread_count()})`), the peers inside peer_arena(); per algorithm all four
// are measured in interleaved rounds (one scheduler alive at a time, made in
// the variant's untimed setup) and each ratio is the median of the
// round-by-round ratios. Every run's result is checked.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>
#include <sinew/schedulers/algorithms.hpp>
#include <sinew/schedulers/scheduler_registry.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

struct data {
  std::vector<double> x;  ///< reduce input
  double sum = 0;         ///< its exact sum
  std::vector<std::int64_t> in, out;  ///< scan
  std::vector<std::uint32_t> orig, keys;  ///< sort: the input, and the array sorted in place
  std::uint64_t keys_sum = 0;

  explicit data(std::size_t n) : x(n), in(n), out(n), orig(n), keys(n) {
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = double(i % 1024);
      sum += x[i];
      in[i] = std::int64_t(i % 7) - 2;
    }
    std::mt19937 g(42);
    for (auto& k : orig) {
      k = g();
      keys_sum += k;
    }
  }

  std::string check_sum(double got) const {
    return got == sum ? "" : "sum " + std::to_string(got) + ", expected " + std::to_string(sum);
  }
  std::string check_scan() const {
    std::int64_t prev = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (out[i] != prev + in[i]) return "scan wrong at " + std::to_string(i);
      prev = out[i];
    }
    return "";
  }
  std::string check_sort() const {
    if (!std::is_sorted(keys.begin(), keys.end())) return "not sorted";
    std::uint64_t s = 0;
    for (auto k : keys) s += k;
    return s == keys_sum ? "" : "sorted keys are not the input's";
  }
};

double block_sum(const double* x, std::size_t b, std::size_t e, double acc) {
  for (std::size_t i = b; i < e; ++i) acc += x[i];
  return acc;
}

void run(sb::context& ctx) {
  const std::size_t n = ctx.smoke() ? 100'000 : ctx.quick() ? 10'000'000 : 100'000'000;
  const unsigned threads = sb::thread_count();
  const std::size_t grain = 1 << 16;  // reduce: blocks of 512 KiB
  ctx.param("elements", n);
  ctx.param("threads", threads);
  ctx.param("reduce_grain", grain);
  data d(n);
  double got_sum = 0;
  auto reset_keys = [&] { std::copy(d.orig.begin(), d.orig.end(), d.keys.begin()); };
  auto check_sum = [&] { return d.check_sum(got_sum); };
  auto check_scan = [&] { return d.check_scan(); };
  auto check_sort = [&] { return d.check_sort(); };
  const char* const policy_names[] = {"tbb", "steal", "deal"};
  sb::policy_slot slot;
  // Per algorithm: every policy (`mine(s)` runs it on scheduler s) and the
  // peer in interleaved rounds, one scheduler alive at a time (the memory
  // bandwidth these loops are bound by drifts over minutes on a shared
  // host), each ratio the median of its round-by-round ratios. Elements per
  // second; a sort resets its input first (untimed).
  auto compare = [&](const char* alg, const char* peer_name, std::function<void(sinew::scheduler&)> mine,
                     std::function<void()> peer, const std::function<std::string()>& check,
                     const std::string& sinew_note, const std::string& peer_note) {
    const bool sort = std::string_view(alg) == "sort";
    auto variant = [&](const std::string& name, const char* policy, std::function<void()> run,
                       const std::string& note) {
      return sb::variant{.name = name,
                         .unit = "Melem/s",
                         .better = sb::higher,
                         .setup =
                             [&, policy, sort] {
                               if (policy) slot.use(policy);
                               else slot.none();
                               if (sort) reset_keys();
                             },
                         .run = std::move(run),
                         .to_metric = [n](double s) { return double(n) / s / 1e6; },
                         .check = check,
                         .note = note};
    };
    std::vector<sb::variant> vs;
    for (const char* policy : policy_names)
      vs.push_back(variant(std::string(alg) + ", sinew " + policy, policy, [&] { mine(slot.get()); },
                           std::string(policy) + "_scheduler(" + std::to_string(threads) + "), " + sinew_note));
    vs.push_back(variant(std::string(alg) + ", " + peer_name, nullptr,
                         [&] { sb::peer_arena().execute(peer); }, peer_note));
    const auto s = ctx.measure_interleaved(vs);
    const std::size_t p = vs.size() - 1;
    for (std::size_t i = 0; i < p; ++i)
      ctx.ratio(std::string("algorithms_") + alg + "_" + policy_names[i], sb::paired_ratio(*s[i], *s[p]), 0.95,
                sb::higher,
                std::string("sinew ") + policy_names[i] + " elements/s / " + peer_name +
                    " elements/s (median of paired rounds)");
  };

  compare(
      "reduce", "tbb::parallel_reduce",
      [&](sinew::scheduler& s) {
        got_sum = sinew::parallel_reduce(
            s, n, grain, 0.0, [&](std::size_t b, std::size_t e, double acc) { return block_sum(d.x.data(), b, e, acc); },
            std::plus<>{});
      },
      [&] {
        got_sum = tbb::parallel_reduce(
            tbb::blocked_range<std::size_t>(0, n), 0.0,
            [&](const tbb::blocked_range<std::size_t>& r, double acc) {
              return block_sum(d.x.data(), r.begin(), r.end(), acc);
            },
            std::plus<>{});
      },
      check_sum, "index form, grain 65536", "auto_partitioner");
  compare(
      "scan", "tbb::parallel_scan",
      [&](sinew::scheduler& s) { sinew::parallel_inclusive_scan(s, d.in.begin(), d.in.end(), d.out.begin()); },
      [&] {
        tbb::parallel_scan(
            tbb::blocked_range<std::size_t>(0, n), std::int64_t(0),
            [&](const tbb::blocked_range<std::size_t>& r, std::int64_t acc, bool final) {
              const std::int64_t* in = d.in.data();
              std::int64_t* out = d.out.data();
              for (std::size_t i = r.begin(); i < r.end(); ++i) {
                acc += in[i];
                if (final) out[i] = acc;
              }
              return acc;
            },
            std::plus<>{});
      },
      check_scan, "int64, out of place", "int64, out of place");
  compare(
      "sort", "tbb::parallel_sort", [&](sinew::scheduler& s) { sinew::parallel_sort(s, d.keys.begin(), d.keys.end()); },
      [&] { tbb::parallel_sort(d.keys.begin(), d.keys.end()); }, check_sort, "random uint32", "random uint32");
}

const sb::registrar reg("algorithms",
                        "parallel reduce (sum of doubles), inclusive scan (int64) and sort (uint32) of 10^8 "
                        "elements (quick 10^7): Sinew's algorithms under tbb/steal/deal vs oneTBB's",
                        run);

}  // namespace
