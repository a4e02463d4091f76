// Per-worker and per-run statistics of every policy on a
// synthetic 4x4 topology -- tasks, busy time, steals split into same node /
// remote, bytes read from remote nodes (from placement and the tasks'
// locality hints), load-balance ratio -- and the NUMA arenas of `tbb`.
#include <catch2/catch.hpp>

#include "test_common.hpp"
#include "test_sched_common.hpp"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/schedulers/placement.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>

using namespace sinew;
using sched_test::line4x4;
using sched_test::MiB;
using sched_test::settled_stats;

namespace {

std::unique_ptr<scheduler> make_numa(const std::string& p, const topology& t) {
  if (p == "tbb") return std::make_unique<tbb_scheduler>(t);
  if (p == "steal") return std::make_unique<steal_scheduler>(t);
  return std::make_unique<deal_scheduler>(t);
}

// Node of the worker running the caller, whatever the policy.
int node_now(const scheduler& s) {
  if (auto* t = dynamic_cast<const tbb_scheduler*>(&s)) return t->current_node();
  if (auto* t = dynamic_cast<const steal_scheduler*>(&s)) return t->current_node();
  return dynamic_cast<const deal_scheduler&>(s).current_node();
}

// `tasks` tasks, task k reading one 2 MiB buffer placed `coarse` over the
// topology's nodes (buffer k on node k % 4), all submitted from outside in a
// shuffled order. Each task records the node it ran on; returns the remote
// bytes that implies, and checks the scheduler counted the same.
std::uint64_t map_over_placed_data(scheduler& s, const topology& topo, std::size_t tasks) {
  placer coarse(topo, placement::coarse);
  std::vector<std::vector<std::uint64_t>> D;
  for (std::size_t k = 0; k < tasks; ++k) {
    page_map m = coarse.place(2 * MiB);
    auto b = bytes_per_node(m, 0, m.bytes());
    D.emplace_back(b.begin(), b.end());
  }
  std::vector<int> ran_on(tasks, -2);
  std::vector<std::size_t> order(tasks);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  s.reset_stats();
  {
    task_group g(s);
    for (std::size_t k : order) g.run([&, k] { ran_on[k] = node_now(s); }, {.bytes_on_node = D[k]});
    g.wait();
  }
  auto st = settled_stats(s, tasks);
  std::uint64_t expected = 0, hinted = 0;
  for (std::size_t k = 0; k < tasks; ++k) {
    REQUIRE(ran_on[k] >= 0);
    expected += 2 * MiB - D[k][std::size_t(ran_on[k])];
    hinted += 2 * MiB;
  }
  CHECK(st.hinted_bytes() == hinted);
  CHECK(st.remote_bytes() == expected);
  CHECK(st.remote_fraction() == Approx(double(expected) / double(hinted)));
  // Per worker: a worker's remote bytes are what its node does not hold.
  for (const auto& w : st.workers)
    if (w.node >= 0) CHECK(w.remote_bytes <= w.hinted_bytes);
  return expected;
}

}  // namespace

TEST_CASE("stats: load-balance ratio and sums over workers", "[sched3][scheduler]") {
  scheduler_stats s;
  s.workers.resize(3);
  s.workers[0] = {.tasks = 4, .busy_ns = 100, .steals = 3, .node = 0, .steals_same_node = 1,
                  .steals_remote = 2, .hinted_bytes = 10, .remote_bytes = 4};
  s.workers[1] = {.tasks = 2, .busy_ns = 400, .steals = 1, .node = 1, .steals_same_node = 1,
                  .steals_remote = 0, .hinted_bytes = 30, .remote_bytes = 1};
  s.workers[2] = {};  // ran nothing: not part of the ratio
  CHECK(s.load_balance() == Approx(0.25));
  CHECK(s.steals_same_node() == 2);
  CHECK(s.steals_remote() == 2);
  CHECK(s.hinted_bytes() == 40);
  CHECK(s.remote_bytes() == 5);
  CHECK(s.remote_fraction() == Approx(0.125));
  CHECK(scheduler_stats{}.load_balance() == 1.0);
  CHECK(scheduler_stats{}.remote_fraction() == 0.0);
}

TEST_CASE("stats: every policy counts the remote bytes of the tasks it ran exactly",
          "[sched3][scheduler][tsan]") {
  const std::string p = GENERATE("tbb", "steal", "deal");
  if (sched_test::tsan && p == "tbb") return;  // libtbb is not instrumented (see `make tsan`)
  INFO("policy " << p);
  const topology topo = line4x4();
  auto s = make_numa(p, topo);
  CHECK(s->concurrency() == 16);
  map_over_placed_data(*s, topo, 128);
  auto st = s->stats();
  std::uint64_t tasks = 0;
  for (const auto& w : st.workers) tasks += w.tasks;
  CHECK(tasks == 128);
  // Every worker slot of a NUMA scheduler knows its node: 4 per node.
  std::vector<int> per_node(4, 0);
  for (const auto& w : st.workers)
    if (w.node >= 0) per_node[std::size_t(w.node)]++;
  CHECK(per_node == std::vector<int>{4, 4, 4, 4});
}

TEST_CASE("stats: for a map over node-placed data deal reads at most half the remote bytes of steal",
          "[sched3][deal][steal][tsan]") {
  const topology topo = line4x4();
  steal_scheduler steal(topo);
  deal_scheduler deal(topo);
  const std::uint64_t rs = map_over_placed_data(steal, topo, 256);
  const std::uint64_t rd = map_over_placed_data(deal, topo, 256);
  INFO("remote bytes: steal " << rs << ", deal " << rd << " of " << 256 * 2 * MiB);
  CHECK(rs > 0);
  CHECK(rd * 2 <= rs);
}

TEST_CASE("stats: steal workers of a synthetic topology split steals by node",
          "[sched3][steal][tsan]") {
  steal_scheduler s(line4x4());
  REQUIRE(s.concurrency() == 16);
  for (unsigned w = 0; w < 16; ++w) CHECK(s.worker_node(w) == int(w / 4));
  CHECK_THROWS_AS(s.worker_node(16), error);
  CHECK(s.current_node() == -1);
  // One task spawns many on its own deque, then waits until another worker
  // has run one of them, which it can only have stolen.
  std::atomic<int> done{0};
  sched_test::steal_witness witness(0, 1);
  {
    task_group g(s);
    g.run([&] {
      for (int i = 0; i < 2000; ++i)
        g.run([&] {
          witness.block(0);
          volatile int x = 0;
          for (int k = 0; k < 2000; ++k) x = x + k;
          done++;
        });
      witness.block(0);
    });
    g.wait();
  }
  CHECK(done.load() == 2000);
  CHECK(witness.stolen());
  auto st = settled_stats(s, 2001);
  for (const auto& w : st.workers) CHECK(w.steals == w.steals_same_node + w.steals_remote);
  CHECK(st.steals_same_node() + st.steals_remote() > 0);
  // A hint with the wrong number of nodes is an error naming the scheduler.
  std::vector<std::uint64_t> three = {1, 2, 3};
  CHECK_THROWS_WITH(s.submit([] {}, {.bytes_on_node = three}),
                    Catch::Contains("steal_scheduler::submit") && Catch::Contains("4 nodes"));
}

TEST_CASE("tbb: one arena per node, tasks go to the arena of their hint", "[sched3][scheduler]") {
  const topology topo = line4x4();
  tbb_scheduler s(topo);
  CHECK(s.arenas() == 4);
  CHECK(s.concurrency() == 16);
  CHECK(s.current_node() == -1);
  std::vector<std::uint64_t> on2 = {0, 0, 3 * MiB, 0};
  std::vector<std::uint64_t> near1 = {MiB, MiB, 0, MiB};  // cost: 60,40,60,80 (x MiB)
  std::atomic<int> bad{0}, children_elsewhere{0};
  {
    task_group g(s);
    for (int i = 0; i < 50; ++i) {
      g.run([&] { if (s.current_node() != 2) bad++; }, {.bytes_on_node = on2});
      g.run([&] { if (s.current_node() != 1) bad++; }, {.bytes_on_node = near1});
      g.run([&] { if (s.current_node() != 3) bad++; }, {.numa_node = 3});
      // No hint from inside a task: the submitter's arena.
      g.run([&] {
        const int here = s.current_node();
        g.run([&, here] { if (s.current_node() != here) children_elsewhere++; });
      }, {.numa_node = 0});
    }
    g.wait();
  }
  CHECK(bad.load() == 0);
  CHECK(children_elsewhere.load() == 0);
  auto st = settled_stats(s, 250);
  CHECK(st.tasks_run == 250);
  // Hinted bytes: 50 x 3 MiB (all local) + 50 x 3 MiB (2 MiB remote from node 1).
  CHECK(st.hinted_bytes() == 300 * MiB);
  CHECK(st.remote_bytes() == 100 * MiB);
  // Per arena: node 2's workers ran the on2 tasks, node 3's the numa_node ones.
  std::vector<std::uint64_t> per_node(4, 0);
  for (const auto& w : st.workers)
    if (w.node >= 0) per_node[std::size_t(w.node)] += w.tasks;
  CHECK(per_node[2] == 50);
  CHECK(per_node[3] == 50);
  CHECK(per_node[0] + per_node[1] == 150);
  // Loops run in one arena and cover the range.
  std::atomic<std::size_t> sum{0};
  s.parallel_for(10'000, 16, [&](std::size_t b, std::size_t e) { sum += e - b; });
  CHECK(sum.load() == 10'000);
  std::vector<std::uint64_t> two = {1, 2};
  CHECK_THROWS_WITH(s.submit([] {}, {.bytes_on_node = two}), Catch::Contains("tbb_scheduler::submit"));
}

TEST_CASE("the README scheduler-library example runs on a synthetic 4x4 topology", "[sched3][scheduler]") {
  // As in README.md ("Using the scheduler alone"), with topology::current()
  // replaced by a synthetic 4 x 4 one so that the numbers are exact here.
  const topology topo = line4x4();
  deal_scheduler s(topo);
  placer coarse(topo, placement::coarse);
  std::vector<float*> blocks;
  std::vector<std::vector<std::uint64_t>> D;
  for (int k = 0; k < 64; ++k) {
    float* b = static_cast<float*>(std::aligned_alloc(4096, 1 << 20));
    page_map m = coarse.bind(b, 1 << 20);
    blocks.push_back(b);
    auto d = bytes_per_node(m, 0, m.bytes());
    D.emplace_back(d.begin(), d.end());
  }
  auto scale = [](float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = float(i) * 0.5f;
  };
  task_group g(s);
  for (int k = 0; k < 64; ++k) g.run([&, k] { scale(blocks[k], 1 << 18); }, {.bytes_on_node = D[k]});
  g.wait();
  auto st = settled_stats(s, 64);  // the README reads s.stats() at once; tasks are counted just after
  CHECK(st.hinted_bytes() == 64u << 20);
  CHECK(st.remote_bytes() == 0);  // 16 tasks per node queue: under the steal threshold (80)
  CHECK(st.steals_remote() == 0);
  CHECK(st.load_balance() > 0.0);
  CHECK(st.load_balance() <= 1.0);
  std::uint64_t tasks = 0;
  for (const auto& w : st.workers) tasks += w.tasks;
  CHECK(tasks == 64);
  for (float* b : blocks) {
    CHECK(b[(1 << 18) - 1] == float((1 << 18) - 1) * 0.5f);
    std::free(b);
  }
}

TEST_CASE("busy time counts the work of many short tasks on every policy", "[scheduler][stats]") {
  // tbb times a slot's first 64 functions and one in sixteen of the rest
  // (the others at the sampled mean); steal and deal time busy spells.
  // Bounds: at least half the work the tasks certainly did, at most every
  // worker busy for the whole wall time, with margin. A sampled task that
  // the OS preempts counts the preemption too, scaled by the sampling: on a
  // loaded machine one such sample can break the upper bound, so a policy
  // gets three tries.
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    double busy = 0, wall_ns = 0;
    const int n = 3000;
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
      const auto spin = std::chrono::microseconds(5);
      const auto t0 = std::chrono::steady_clock::now();
      {
        sinew::task_group g(*s);
        for (int i = 0; i < n; ++i)
          g.run([spin] {
            const auto t = std::chrono::steady_clock::now();
            while (std::chrono::steady_clock::now() - t < spin) {
            }
          });
        g.wait();
      }
      wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      const auto st = settled_stats(*s, std::uint64_t(n));
      busy = 0;
      for (const auto& w : st.workers) busy += double(w.busy_ns);
      if (busy >= 0.5 * n * 5000.0 && busy <= 1.5 * 2 * wall_ns + 1e6) break;
    }
    CHECK(busy >= 0.5 * n * 5000.0);
    CHECK(busy <= 1.5 * 2 * wall_ns + 1e6);
  }
}

TEST_CASE("stats read while reset_stats runs never count more tasks than were submitted", "[scheduler][stats]") {
  // A count since the last reset is the difference of two counters (tbb: a
  // slot's retired functions and its baseline): a reset between the two
  // reads must not wrap it around. One thread resets, one reads, while
  // tasks run on both workers.
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> submitted{0}, worst{0};
    std::thread resetter([&] {
      while (!stop.load(std::memory_order_relaxed)) s->reset_stats();
    });
    std::thread reader([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const scheduler_stats st = s->stats();
        std::uint64_t m = st.tasks_run;
        for (const auto& w : st.workers) m = std::max(m, w.tasks);
        const std::uint64_t bound = submitted.load(std::memory_order_acquire);
        if (m > bound) worst.store(m, std::memory_order_relaxed);
      }
    });
    {
      sinew::task_group g(*s);
      for (int i = 0; i < 200000; ++i) {
        submitted.fetch_add(1, std::memory_order_release);
        g.run([] {});
      }
      g.wait();
    }
    stop.store(true, std::memory_order_relaxed);
    resetter.join();
    reader.join();
    CHECK(worst.load() == 0);
  }
}
