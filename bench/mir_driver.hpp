#pragma once
// The driver of the mir programs (mir_programs.hpp): every program under
// every policy and placement, the rows mir_suite and numa_sim report, and
// the paired ratio of two policies' rounds.
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "mir_programs.hpp"

namespace mir {

/// One measured combination.
struct row {
  std::string program, policy, placement;
  sinew::placement effective;
  double median_s = 0;          ///< 0 when not measured (--variant)
  double remote_fraction = 0;   ///< remote / hinted bytes of one untimed run
  double floor_fraction = 0;    ///< the least remote fraction for its layout (hinted_floor)
  double ceiling_fraction = 0;  ///< the most remote fraction for its layout (hinted_ceiling)
  std::vector<double> seconds;  ///< timed runs, paired with the other policies' of its layout
};

inline const char* const policies[] = {"steal", "deal", "tbb"};
inline const sinew::placement placements[] = {sinew::placement::fine, sinew::placement::coarse,
                                              sinew::placement::standard, sinew::placement::automatic};

/// Runs every program under every policy x placement. `make` builds a
/// scheduler of the policy; `topo` is what the placements see.
inline std::vector<row> run_suite(sinew_bench::context& ctx, const sinew::topology& topo, const sizes& z,
                                  const std::function<std::unique_ptr<sinew::scheduler>(const std::string&)>& make) {
  namespace sb = sinew_bench;
  std::vector<std::unique_ptr<sinew::scheduler>> scheds;
  for (const char* p : policies) scheds.push_back(make(p));
  std::vector<row> rows;
  for (auto& P : make_suite(z)) {
    ctx.param(P->name(), P->describe());
    for (sinew::placement pl : placements) {
      // One layout, then the policies interleaved (rounds that run each once,
      // rotating order): their times are paired samples of the same moment,
      // so drift of the machine (a VM's neighbours, clocks) between one
      // policy's block of runs and the next does not enter their ratios.
      allocator a(topo, pl, P->usage());
      P->place(a);
      program* pp = P.get();
      std::vector<sb::variant> vs;
      for (std::size_t k = 0; k < scheds.size(); ++k) {
        sinew::scheduler* s = scheds[k].get();
        std::string label = P->name() + " " + policies[k] + "+" + std::string(sinew::to_string(pl));
        if (pl == sinew::placement::automatic) label += "(" + std::string(sinew::to_string(a.effective())) + ")";
        vs.push_back({.name = label,
                      .unit = "ms",
                      .better = sb::lower,
                      .setup = [pp] { pp->reset(); },
                      .run = [pp, s] { pp->run(*s); },
                      .to_metric = [](double sec) { return sec * 1e3; },
                      .check = [pp] { return pp->check(); },
                      .note = std::to_string(s->concurrency()) + " workers"});
      }
      // At least 0.25 s of timed runs per variant (up to 4x the rounds):
      // Map (1.6 ms on 16 cores) and Reduction (3.5 ms) get 60 rounds.
      const auto ser = ctx.measure_interleaved(vs, 0.25);
      for (std::size_t k = 0; k < scheds.size(); ++k) {
        sinew::scheduler& s = *scheds[k];
        row r{P->name(), policies[k], std::string(sinew::to_string(pl)), a.effective(), 0, 0, 0, 0, {}};
        r.median_s = ser[k]->stats.n ? ser[k]->time.median : 0.0;
        r.seconds = ser[k]->seconds;
        if (ser[k]->stats.n) {  // one more, untimed run for the byte counts
          P->reset();
          s.reset_stats();
          hinted_total.store(0);
          hinted_floor.store(0);
          hinted_ceiling.store(0);
          P->run(s);
          if (const std::uint64_t t = hinted_total.load()) {
            r.floor_fraction = double(hinted_floor.load()) / double(t);
            r.ceiling_fraction = double(hinted_ceiling.load()) / double(t);
          }
          // Counters are updated before a task's function runs, so after
          // the program's last wait they are complete.
          r.remote_fraction = s.stats().remote_fraction();
        }
        rows.push_back(r);
      }
    }
  }
  return rows;
}

/// Median over rounds of a.seconds[i] / b.seconds[i] (paired samples of
/// one measure_interleaved call) of every pair (a, b) together, with the
/// 25th and 75th percentiles; all 0 when none was measured.
struct paired {
  double median = 0, lo = 0, hi = 0;
};
inline paired paired_ratio(const std::vector<std::pair<const row*, const row*>>& ab) {
  std::vector<double> r;
  for (auto [a, b] : ab) sinew_bench::append_round_ratios(a->seconds, b->seconds, r);
  if (r.empty()) return {};
  std::sort(r.begin(), r.end());
  auto at = [&](double q) { return r[std::size_t(q * double(r.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.25), at(0.75)};
}

/// The row of `program` / `policy` / `placement`, or null.
inline const row* find(const std::vector<row>& rows, const std::string& program, const std::string& policy,
                       const std::string& placement) {
  for (const auto& r : rows)
    if (r.program == program && r.policy == policy && r.placement == placement) return &r;
  return nullptr;
}

}  // namespace mir
