// numa_sim: the mir_suite programs (bench/mir_programs.hpp) on a synthetic
// NUMA topology -- by default 4 nodes x 4 cores in a line (distances 10, 20,
// 30, 40), or $SINEW_TOPOLOGY when that names several nodes -- reporting the
// fraction of the bytes the tasks touch that sit on another node than the
// worker that ran them, per policy x placement (the accounting model of
// sinew::placer; times are informational, the host runs all the synthetic
// cores on its own). The synthetic LLC is 64 KiB so that Algorithm 1's size
// threshold (LLC / cores per node = 16 KiB) scales with the small --quick
// problems as the paper's LLC does with its inputs.
#include <memory>
#include <string>

#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/sinew.hpp>

#include "bench.hpp"
#include "mir_driver.hpp"

namespace {

namespace sb = sinew_bench;

sinew::topology sim_topology() {
  const sinew::topology cur = sinew::topology::current();
  if (cur.synthetic() && cur.nodes() > 1) return cur;
  return sinew::topology::synthetic(4, 4, {{10, 20, 30, 40}, {20, 10, 20, 30}, {30, 20, 10, 20}, {40, 30, 20, 10}},
                                    64 * 1024);
}

std::unique_ptr<sinew::scheduler> make_policy(const sinew::topology& t, const std::string& p) {
  return sinew::make_scheduler(p, {.topology = t});
}

void run(sb::context& ctx) {
  const sinew::topology topo = sim_topology();
  ctx.param("topology", topo.describe());
  const mir::sizes z = ctx.quick() ? mir::sizes{48, 16 * 1024, 1u << 20, 8, 512, 64, 2, 8, 32, 8, 64}
                                   : mir::sizes{48, 64 * 1024, 4u << 20, 8, 1024, 128, 4, 8, 48, 10, 64};
  auto rows = mir::run_suite(ctx, topo, z, [&](const std::string& p) { return make_policy(topo, p); });

  for (const char* prog : {"map", "jacobi", "matmul", "sparselu", "reduction"}) {
    std::string line = std::string(prog) + ": remote-byte fraction:";
    for (const auto& r : rows)
      if (r.program == prog && r.median_s > 0)
        line += " " + r.policy + "+" + r.placement + " " + sb::format_double(r.remote_fraction, 3);
    ctx.note(line);
    const mir::row* steal = mir::find(rows, prog, "steal", "auto");
    const mir::row* deal = mir::find(rows, prog, "deal", "auto");
    if (!steal || !deal || steal->median_s <= 0 || deal->median_s <= 0) continue;
    // Targets by what the layout allows. Where every task's data sit on one
    // node (the least possible remote fraction is 0: the map, coarse),
    // dealing sends every task to its data: at most half of steal's remote
    // bytes (issue 3's acceptance case). Where some remote bytes are
    // unavoidable (Matmul, SparseLU, coarse), dealing should reach the least
    // fraction the layout allows (every task on the node holding most of its
    // data) and never do worse than steal, whose fraction is that of random
    // placement, not a fixed baseline. Where every placement of the tasks
    // gives the same fraction (fine: each task's bytes spread evenly over
    // the nodes), neither line can miss: informational.
    const std::string name = std::string("numa_sim_") + prog;
    const std::string layout = "(auto = " + std::string(sinew::to_string(deal->effective)) + ")";
    const bool no_choice = deal->ceiling_fraction - deal->floor_fraction < 0.01;
    const std::string same = "every placement of the tasks gives the same remote fraction for this layout " + layout +
                             ": least " + sb::format_double(deal->floor_fraction, 3) + ", most " +
                             sb::format_double(deal->ceiling_fraction, 3);
    const double v = steal->remote_fraction > 0 ? deal->remote_fraction / steal->remote_fraction : 0.0;
    const std::string vs_steal = "remote-byte fraction deal+auto / steal+auto " + layout + ": " +
                                 sb::format_double(deal->remote_fraction, 3) + " / " +
                                 sb::format_double(steal->remote_fraction, 3);
    const double steal_target = deal->floor_fraction <= 0 ? 0.5 : 1.0;
    if (no_choice) ctx.informational_ratio(name + "_remote_deal_vs_steal", v, steal_target, sb::lower, same, vs_steal);
    else ctx.ratio(name + "_remote_deal_vs_steal", v, steal_target, sb::lower, vs_steal);
    const double least = deal->floor_fraction > 0 ? deal->remote_fraction / deal->floor_fraction
                                                  : (deal->remote_fraction > 0 ? 1e9 : 1.0);
    const std::string vs_least = "remote-byte fraction deal+auto / least possible for this layout (each task on the "
                                 "node holding most of its data): " +
                                 sb::format_double(deal->remote_fraction, 3) + " / " +
                                 sb::format_double(deal->floor_fraction, 3);
    if (no_choice)
      ctx.informational_ratio(name + "_remote_deal_vs_least", least, 1.05, sb::lower, same, vs_least);
    else if (deal->floor_fraction <= 0)
      ctx.informational_ratio(name + "_remote_deal_vs_least", least, 1.05, sb::lower,
                              "the layout allows no remote byte: 1.0 is 0/0 (deal_vs_steal is the target)", vs_least);
    else
      ctx.ratio(name + "_remote_deal_vs_least", least, 1.05, sb::lower, vs_least);
  }
}

const sb::registrar reg("numa_sim",
                        "mir_suite programs on a synthetic 4x4 NUMA topology: remote-byte fraction per policy "
                        "(steal/deal/tbb) x placement (fine/coarse/standard/auto)",
                        run);

}  // namespace
