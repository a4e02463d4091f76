// task_graphs: static task graphs built once and run many times, the
// classic shapes of task-parallel benchmarks (Taskflow's wavefront, binary
// tree, linear chain and graph traversal): sinew::task_graph under each
// policy vs a oneTBB flow graph of continue_nodes with the same edges.
//
// Every task counts its own visits (one increment of its own slot), so the
// time per task is the cost of tracking dependencies and scheduling; each
// run checks that every task ran exactly once more.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/task_graph.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace flow = tbb::flow;

/// A DAG as an edge list over tasks 0..n-1.
struct shape {
  std::string key;  // in the ratio's name
  std::string name;
  std::size_t n = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
};

shape wavefront(std::uint32_t b) {  // block (i, j) after (i-1, j) and (i, j-1)
  shape s{"wavefront", "wavefront " + std::to_string(b) + "x" + std::to_string(b), std::size_t(b) * b, {}};
  for (std::uint32_t i = 0; i < b; ++i)
    for (std::uint32_t j = 0; j < b; ++j) {
      if (i + 1 < b) s.edges.emplace_back(i * b + j, (i + 1) * b + j);
      if (j + 1 < b) s.edges.emplace_back(i * b + j, i * b + j + 1);
    }
  return s;
}

shape binary_tree(unsigned depth) {  // node k before 2k+1 and 2k+2
  shape s{"tree", "binary tree depth " + std::to_string(depth), (std::size_t(2) << depth) - 1, {}};
  for (std::uint32_t k = 0; 2 * std::size_t(k) + 2 < s.n; ++k) {
    s.edges.emplace_back(k, 2 * k + 1);
    s.edges.emplace_back(k, 2 * k + 2);
  }
  return s;
}

shape chain(std::uint32_t n) {
  shape s{"chain", "linear chain", n, {}};
  for (std::uint32_t k = 0; k + 1 < n; ++k) s.edges.emplace_back(k, k + 1);
  return s;
}

shape random_dag(std::uint32_t n) {  // each task after up to 4 random earlier ones
  shape s{"random_dag", "random DAG", n, {}};
  std::mt19937 rng(20261126);
  for (std::uint32_t v = 1; v < n; ++v) {
    const unsigned k = rng() % 5;
    for (unsigned e = 0; e < k; ++e) s.edges.emplace_back(std::uint32_t(rng() % v), v);
  }
  return s;
}

std::string check_visits(const std::vector<std::uint32_t>& visits, std::uint32_t want) {
  for (std::size_t i = 0; i < visits.size(); ++i)
    if (visits[i] != want)
      return "task " + std::to_string(i) + " ran " + std::to_string(visits[i]) + " times, expected " +
             std::to_string(want);
  return {};
}

/// The oneTBB peer: one continue_node per task, built in the peers' arena.
struct tbb_flow {
  flow::graph g;
  std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
  std::vector<std::uint32_t> roots;

  tbb_flow(const shape& s, std::vector<std::uint32_t>& visits) {
    std::vector<bool> has_pred(s.n);
    for (std::uint32_t i = 0; i < s.n; ++i)
      nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
          g, [&visits, i](const flow::continue_msg&) { ++visits[i]; }));
    for (auto [u, v] : s.edges) {
      flow::make_edge(*nodes[u], *nodes[v]);
      has_pred[v] = true;
    }
    for (std::uint32_t i = 0; i < s.n; ++i)
      if (!has_pred[i]) roots.push_back(i);
  }
  void run() {
    for (auto r : roots) nodes[r]->try_put(flow::continue_msg());
    g.wait_for_all();
  }
};

void build(sinew::task_graph& g, const shape& s, std::vector<std::uint32_t>& visits) {
  std::vector<sinew::task_handle> h;
  h.reserve(s.n);
  for (std::uint32_t i = 0; i < s.n; ++i) h.push_back(g.emplace([&visits, i] { ++visits[i]; }));
  for (auto [u, v] : s.edges) h[u].precede(h[v]);
}

void run(sb::context& ctx) {
  const bool smoke = ctx.smoke(), quick = ctx.quick();
  std::vector<shape> shapes;
  shapes.push_back(wavefront(smoke ? 16 : quick ? 128 : 256));
  shapes.push_back(binary_tree(smoke ? 8 : quick ? 14 : 16));
  shapes.push_back(chain(smoke ? 1000 : quick ? 20'000 : 100'000));
  shapes.push_back(random_dag(smoke ? 1000 : quick ? 20'000 : 100'000));
  const unsigned threads = sb::thread_count();
  // The targets: 0.85x the flow graph on many cores, parity on few.
  const double target = threads >= 8 ? 0.85 : 1.0;
  ctx.param("threads", threads);
  for (const auto& s : shapes) ctx.param(s.name + " tasks", s.n);

  for (const auto& s : shapes) {
    std::vector<std::uint32_t> visits(s.n);
    std::uint32_t runs = 0;
    auto per_task = [n = s.n](double sec) { return sec / double(n) * 1e9; };
    auto check = [&] { return check_visits(visits, runs); };
    // One variant: `run_once` runs the graph once; every run is counted for the check.
    auto measure = [&](const std::string& name, std::function<void()> run_once, const char* note) -> const auto& {
      return ctx.measure({.name = name,
                          .unit = "ns/task",
                          .better = sb::lower,
                          .setup = nullptr,
                          .run =
                              [&runs, run_once] {
                                ++runs;
                                run_once();
                              },
                          .to_metric = per_task,
                          .check = check,
                          .note = note});
    };

    std::unique_ptr<tbb_flow> peer;
    sb::peer_arena().execute([&] { peer = std::make_unique<tbb_flow>(s, visits); });
    std::fill(visits.begin(), visits.end(), 0u);
    const auto& base = measure(s.name + ", tbb flow graph",
                               [&] { sb::peer_arena().execute([&] { peer->run(); }); },
                               "continue_nodes, try_put to the roots, wait_for_all");
    sb::peer_arena().execute([&] { peer.reset(); });

    for (const char* policy : {"tbb", "steal", "deal"}) {
      auto sched = sinew::make_scheduler(policy, {.threads = threads});
      sinew::task_graph g(s.name);
      build(g, s, visits);
      std::fill(visits.begin(), visits.end(), 0u);
      runs = 0;
      const auto& mine = measure(s.name + ", sinew " + policy, [&] { g.run(*sched).wait(); },
                                 "task_graph built once, run(sched).wait()");
      ctx.ratio("task_graphs_" + s.key + "_" + policy, mine.stats.median / base.stats.median, target, sb::lower,
                "sinew " + std::string(policy) + " ns/task / tbb flow graph ns/task, " + s.name + " (medians)");
    }
  }
}

const sb::registrar reg("task_graphs",
                        "static task graphs run many times (wavefront 256x256, binary tree depth 16, chain and random "
                        "DAG of 1e5 tasks; --quick smaller): sinew::task_graph per policy vs a oneTBB flow graph",
                        run);

}  // namespace
