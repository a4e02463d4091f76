// The `deal` policy [Muddukrishna15, Algorithms 1-2] on a synthetic 4x4
// topology: the decision functions exactly, then the scheduler running.
#include <catch2/catch.hpp>

#include "test_common.hpp"
#include "test_sched_common.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/schedulers/placement.hpp>

using namespace sinew;
using sched_test::line4x4;
using sched_test::MiB;
using sched_test::scaled;
using sched_test::wait_for_count;

namespace {

using D4 = std::vector<std::uint64_t>;

// A task counts as run just after its function returns: let counters catch up.
void settle(const scheduler& s, std::size_t tasks_run) { (void)sched_test::settled_stats(s, tasks_run); }

}  // namespace

// ------------------------------------------------------------------ decisions

TEST_CASE("deal_scheduler: workers, nodes and defaults of a synthetic 4x4 topology", "[deal]") {
  deal_scheduler s(line4x4());
  CHECK(std::string(s.name()) == "deal");
  CHECK(s.concurrency() == 16);
  for (unsigned w = 0; w < 16; ++w) CHECK(s.worker_node(w) == int(w / 4));
  CHECK_THROWS_AS(s.worker_node(16), sinew::error);
  CHECK(s.current_node() == -1);  // not a worker
  CHECK(s.topo().nodes() == 4);
}

TEST_CASE("deal_scheduler: choose_node follows Algorithm 1", "[deal]") {
  deal_scheduler s(line4x4());  // size threshold 1 MiB, tolerance 0
  SECTION("at or below the size threshold: local") {
    CHECK(s.choose_node(D4{0, 0, MiB, 0}, 0) == 0);          // Sum(D) == LLC/C: not above
    CHECK(s.choose_node(D4{0, 0, MiB / 2, 0}, 3) == 3);
    CHECK(s.choose_node(D4{0, 0, 0, 0}, 1) == 1);
    CHECK(s.choose_node(D4{0, 0, MiB + 1, 0}, 0) == 2);      // just above: dealt
  }
  SECTION("evenly spread (standard deviation 0): local") {
    CHECK(s.choose_node(D4{8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB}, 3) == 3);
    CHECK(s.choose_node(D4{8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB}, 0) == 0);
  }
  SECTION("skewed: argmin of sum_j D[j] * dist(i, j)") {
    CHECK(s.choose_node(D4{0, 0, 0, 2 * MiB}, 0) == 3);
    CHECK(s.choose_node(D4{4 * MiB, MiB, 0, 0}, 3) == 0);
    // costs 9900, 7950, 7900, 9850 (x MiB): node 2
    CHECK(s.choose_node(D4{100 * MiB, 95 * MiB, 100 * MiB, 100 * MiB}, 0) == 2);
  }
  SECTION("the cheapest node need not hold the most bytes") {
    // D = {6, 0, 5, 5} MiB: costs 410, 370, 330, 390 -> node 2 although node 0 holds most.
    CHECK(s.choose_node(D4{6 * MiB, 0, 5 * MiB, 5 * MiB}, 0) == 2);
    // D = {3, 0, 0, 2} MiB: costs 110, 120, 130, 140 -> node 0; {3, 0, 2, 2}: 170, 160, 150, 180
    CHECK(s.choose_node(D4{3 * MiB, 0, 0, 2 * MiB}, 3) == 0);
    CHECK(s.choose_node(D4{3 * MiB, 0, 2 * MiB, 2 * MiB}, 0) == 2);
  }
  SECTION("ties: the node holding most of D, then the local node, then the lowest index") {
    // D = {X, 0, X, 0}: costs 40X, 40X, 40X, 60X; node 1 holds nothing
    // (all of D remote), nodes 0 and 2 half of it.
    const D4 d{2 * MiB, 0, 2 * MiB, 0};
    CHECK(s.choose_node(d, 1) == 0);
    CHECK(s.choose_node(d, 2) == 2);
    CHECK(s.choose_node(d, 3) == 0);
    // D = {X, 0, 0, X}: all four cost 50X; nodes 0 and 3 hold X
    CHECK(s.choose_node(D4{MiB, 0, 0, MiB}, 0) == 0);
    CHECK(s.choose_node(D4{MiB, 0, 0, MiB}, 1) == 0);
    CHECK(s.choose_node(D4{MiB, 0, 0, MiB}, 2) == 0);
    CHECK(s.choose_node(D4{MiB, 0, 0, MiB}, 3) == 3);
    // D = {2, 0, 1, 0} costs 50, 60, 70, 100
    CHECK(s.choose_node(D4{2 * MiB, 0, MiB, 0}, 2) == 0);
  }
  SECTION("bad arguments") {
    CHECK_THROWS_AS(s.choose_node(D4{1, 2, 3}, 0), sinew::error);
    CHECK_THROWS_AS(s.choose_node(D4{1, 2, 3, 4}, 4), sinew::error);
    CHECK_THROWS_AS(s.choose_node(D4{1, 2, 3, 4}, -1), sinew::error);
  }
}

TEST_CASE("deal_scheduler: size threshold and spread tolerance options", "[deal]") {
  SECTION("default threshold is LLC bytes / cores per node") {
    deal_scheduler s(topology::synthetic(4, 4, {}, 64 * MiB));  // 16 MiB
    CHECK(s.choose_node(D4{0, 16 * MiB, 0, 0}, 0) == 0);
    CHECK(s.choose_node(D4{0, 16 * MiB + 1, 0, 0}, 0) == 1);
  }
  SECTION("explicit threshold") {
    deal_options o;
    o.size_threshold = 1000;
    deal_scheduler s(line4x4(), o);
    CHECK(s.choose_node(D4{0, 0, 1000, 0}, 0) == 0);
    CHECK(s.choose_node(D4{0, 0, 1001, 0}, 0) == 2);
  }
  SECTION("tolerance: max - min <= tolerance * sum counts as evenly spread") {
    deal_options o;
    o.spread_tolerance = 0.05;
    deal_scheduler s(line4x4(), o);
    // max - min = 5, sum = 395: 5 <= 19.75 -> evenly spread, local
    CHECK(s.choose_node(D4{100 * MiB, 95 * MiB, 100 * MiB, 100 * MiB}, 0) == 0);
    // max - min = 60, sum = 340: 60 > 17 -> dealt (costs 7600, 6200, 6800, 9400 -> node 1)
    CHECK(s.choose_node(D4{100 * MiB, 100 * MiB, 100 * MiB, 40 * MiB}, 0) == 1);
    // exactly at the bound: max - min = 20 = 0.05 * 400 -> local
    CHECK(s.choose_node(D4{90 * MiB, 110 * MiB, 100 * MiB, 100 * MiB}, 3) == 3);
  }
  SECTION("bad options throw") {
    deal_options o;
    o.spread_tolerance = -1;
    CHECK_THROWS_AS(deal_scheduler(line4x4(), o), sinew::error);
    deal_options b;
    b.backoff_min = std::chrono::microseconds(10);
    b.backoff_max = std::chrono::microseconds(1);
    CHECK_THROWS_AS(deal_scheduler(line4x4(), b), sinew::error);
    deal_options c;
    c.backoff_poll = std::chrono::nanoseconds(-1);
    CHECK_THROWS_AS(deal_scheduler(line4x4(), c), sinew::error);
  }
}

TEST_CASE("deal_scheduler: tasks pushed while workers back off run for every backoff_poll", "[deal]") {
  // Bursts from an outside thread with gaps that send the workers into the
  // yielding back-off steps (and to sleep): whether a waiting worker looks
  // at the queue after every yield (0), every 8 us, or once per step (1 s),
  // every task runs exactly once.
  for (auto poll : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(8'000), std::chrono::nanoseconds(1'000'000'000)}) {
    deal_options o;
    o.backoff_poll = poll;
    deal_scheduler s(sinew::topology::synthetic(1, 4, {{10}}), o);
    std::vector<std::atomic<int>> ran(2000);
    for (int burst = 0; burst < 20; ++burst) {
      sinew::task_group g(s);
      for (int i = 0; i < 100; ++i) g.run([&ran, k = burst * 100 + i] { ran[std::size_t(k)].fetch_add(1); });
      g.wait();
      std::this_thread::sleep_for(std::chrono::microseconds(burst % 4 == 0 ? 200 : 20));
    }
    for (auto& r : ran) REQUIRE(r.load() == 1);
  }
}

TEST_CASE("deal_scheduler: may_steal uses sizeof(Q_i) > distance(i, n) * C", "[deal]") {
  deal_scheduler s(line4x4());
  // own queue: any task
  CHECK(s.may_steal(1, 1, 1));
  CHECK_FALSE(s.may_steal(1, 1, 0));
  // distance 20: more than 80 tasks
  CHECK_FALSE(s.may_steal(0, 1, 80));
  CHECK(s.may_steal(0, 1, 81));
  CHECK_FALSE(s.may_steal(2, 1, 80));
  CHECK(s.may_steal(2, 1, 81));
  // distance 30: more than 120
  CHECK_FALSE(s.may_steal(0, 2, 120));
  CHECK(s.may_steal(0, 2, 121));
  CHECK_FALSE(s.may_steal(3, 1, 120));
  CHECK(s.may_steal(3, 1, 121));
  // distance 40: more than 160
  CHECK_FALSE(s.may_steal(0, 3, 160));
  CHECK(s.may_steal(0, 3, 161));
  CHECK_FALSE(s.may_steal(3, 0, 160));
  CHECK(s.may_steal(3, 0, 161));
  CHECK_THROWS_AS(s.may_steal(0, 4, 1), sinew::error);

  SECTION("asymmetric distances: distance(victim, thief) is used") {
    deal_scheduler a(topology::synthetic(2, 2, {{10, 20}, {50, 10}}));
    CHECK(a.may_steal(0, 1, 101));        // distance(1, 0) * 2 = 100
    CHECK_FALSE(a.may_steal(0, 1, 100));
    CHECK(a.may_steal(1, 0, 41));         // distance(0, 1) * 2 = 40
    CHECK_FALSE(a.may_steal(1, 0, 40));
  }
}

TEST_CASE("deal_scheduler: find_victim follows Algorithm 2's order and thresholds", "[deal]") {
  using L = std::vector<std::size_t>;
  deal_scheduler s(line4x4());  // thresholds: distance * 4 = 80 (1 hop), 120 (2), 160 (3)
  // Own queue first, however short, and however long the others are.
  CHECK(s.find_victim(0, L{1, 1000, 1000, 1000}) == 0);
  // Nearest first: node 0 visits 1, 2, 3.
  CHECK(s.find_victim(0, L{0, 81, 1000, 1000}) == 1);
  CHECK(s.find_victim(0, L{0, 80, 121, 1000}) == 2);   // node 1 at its threshold: refused
  CHECK(s.find_victim(0, L{0, 80, 120, 161}) == 3);
  CHECK(s.find_victim(0, L{0, 80, 120, 160}) == -1);   // nothing above a threshold: back off
  // Ties in distance by index: node 2 visits 1 and 3 (both 20), then 0.
  CHECK(s.find_victim(2, L{1000, 81, 0, 81}) == 1);
  CHECK(s.find_victim(2, L{1000, 80, 0, 81}) == 3);
  CHECK(s.find_victim(2, L{121, 80, 0, 80}) == 0);
  CHECK(s.find_victim(2, L{120, 80, 0, 80}) == -1);
  // Vicinities: only the own group.
  deal_options o;
  o.vicinities = {{0, 1}, {2, 3}};
  deal_scheduler v(line4x4(), o);
  CHECK(v.find_victim(1, L{0, 0, 1000, 1000}) == -1);
  CHECK(v.find_victim(1, L{81, 0, 1000, 1000}) == 0);
  CHECK_THROWS_AS(s.find_victim(0, L{0, 0, 0}), sinew::error);
  CHECK_THROWS_AS(s.find_victim(4, L{0, 0, 0, 0}), sinew::error);
}

TEST_CASE("deal_scheduler: vicinities restrict stealing to a group", "[deal]") {
  deal_options o;
  o.vicinities = {{0, 1}, {2, 3}};
  deal_scheduler s(line4x4(), o);
  CHECK(s.may_steal(0, 1, 81));
  CHECK(s.may_steal(1, 0, 81));
  CHECK(s.may_steal(2, 3, 81));
  CHECK_FALSE(s.may_steal(1, 2, 1'000'000));
  CHECK_FALSE(s.may_steal(0, 3, 1'000'000));
  CHECK_FALSE(s.may_steal(3, 0, 1'000'000));
  CHECK(s.may_steal(2, 2, 1));

  deal_options single;
  single.vicinities = {{0, 1}};  // nodes 2 and 3: groups of one
  deal_scheduler t(line4x4(), single);
  CHECK(t.may_steal(0, 1, 81));
  CHECK_FALSE(t.may_steal(2, 3, 1'000'000));
  CHECK_FALSE(t.may_steal(1, 2, 1'000'000));
  CHECK(t.may_steal(3, 3, 1));

  deal_options twice;
  twice.vicinities = {{0, 1}, {1, 2}};
  CHECK_THROWS_AS(deal_scheduler(line4x4(), twice), sinew::error);
  deal_options bad;
  bad.vicinities = {{0, 4}};
  CHECK_THROWS_AS(deal_scheduler(line4x4(), bad), sinew::error);
}

// ------------------------------------------------------------------ running

TEST_CASE("deal_scheduler: tasks whose data is on node 2 are dealt to and run on node 2",
          "[deal][tsan]") {
  deal_scheduler s(line4x4());
  const std::size_t n = 64;  // < 80: no other node may steal them
  const D4 d{0, 0, 2 * MiB, 0};
  std::vector<std::atomic<int>> ran_on(n);
  task_group g(s);
  for (std::size_t i = 0; i < n; ++i)
    g.run([&s, &ran_on, i] { ran_on[i].store(s.current_node()); }, {.bytes_on_node = d});
  g.wait();
  settle(s, n);
  auto st = s.deal_stats();
  CHECK(st.dealt == std::vector<std::uint64_t>{0, 0, n, 0});
  CHECK(st.kept_local == 0);
  CHECK(st.steals_remote == 0);
  CHECK(st.remote_bytes == 0);
  std::size_t on2 = 0;
  for (auto& r : ran_on) on2 += r.load() == 2;
  CHECK(on2 == n);

  // Small data stays local; a numa_node hint is followed; mismatched D throws.
  s.reset_stats();
  std::atomic<int> where{-9};
  task_group h(s);
  h.run([&] { where = s.current_node(); }, {.numa_node = 3});
  h.wait();
  CHECK(where.load() == 3);
  const D4 small{0, 1000, 0, 0};
  h.run([] {}, {.bytes_on_node = small});
  h.run([] {});
  h.wait();
  settle(s, 3);
  st = s.deal_stats();
  CHECK(st.directed == std::vector<std::uint64_t>{0, 0, 0, 1});
  CHECK(st.kept_local == 2);
  CHECK(st.dealt == std::vector<std::uint64_t>{0, 0, 0, 0});
  const D4 three{1, 2, 3};
  CHECK_THROWS_AS(s.submit([] {}, {.bytes_on_node = three}), sinew::error);
  // Buffers of unknown node give no D: kept local.
  std::vector<float> v(1 << 20);
  buffer_ref b = buffer_ref::wrap(v.data(), v.size());
  std::vector<buffer_ref> reads{b};
  h.run([] {}, {.reads = reads});
  h.wait();
  settle(s, 4);
  CHECK(s.deal_stats().kept_local == 3);
}

TEST_CASE("deal_scheduler: dealing halves the remote bytes of a map over node-placed data",
          "[deal][tsan]") {
  // 256 tasks, task k reads one 2 MiB buffer placed `coarse` (buffer k on
  // node k % 4). Under deal every task runs where its data is (queues hold at
  // most 64 < 80 tasks, so nothing is stolen); a naive placement of the same
  // tasks runs about 3/4 of them remotely.
  const topology topo = line4x4();
  const std::size_t tasks = 256;
  placer coarse(topo, placement::coarse);
  std::vector<D4> D;
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < tasks; ++k) {
    page_map m = coarse.place(2 * MiB);
    auto b = bytes_per_node(m, 0, m.bytes());
    D.emplace_back(b.begin(), b.end());
    total += 2 * MiB;
  }
  std::atomic<std::uint64_t> work{0};
  auto body = [&work](std::size_t k) { work.fetch_add(k, std::memory_order_relaxed); };
  // Submits every task from outside, in the order `order`.
  auto run_all = [&](deal_scheduler& s, const std::vector<std::size_t>& order) {
    task_group g(s);
    for (std::size_t k : order) g.run([&body, k] { body(k); }, {.bytes_on_node = D[k]});
    g.wait();
    settle(s, tasks);
    return s.deal_stats();
  };
  std::vector<std::size_t> order(tasks);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::shuffle(order.begin(), order.end(), std::mt19937(11));

  deal_scheduler deal(topo);
  auto sd = run_all(deal, order);
  CHECK(sd.dealt == std::vector<std::uint64_t>{64, 64, 64, 64});
  CHECK(sd.steals_remote == 0);

  deal_options never;
  never.size_threshold = UINT64_MAX;  // Algorithm 1 never deals: round-robin over nodes
  deal_scheduler naive(topo, never);
  auto sn = run_all(naive, order);
  CHECK(sn.kept_local == tasks);

  // Naive variant 2: one task spawns them all (all local to its node).
  deal_scheduler naive2(topo, never);
  {
    task_group g(naive2);
    g.run([&] {
      for (std::size_t k : order) g.run([&body, k] { body(k); }, {.bytes_on_node = D[k]});
    });
    g.wait();
    settle(naive2, tasks + 1);
  }
  auto sn2 = naive2.deal_stats();
  INFO("remote bytes: deal " << sd.remote_bytes << ", round-robin " << sn.remote_bytes
                             << ", spawner-local " << sn2.remote_bytes << " of " << total);
  CHECK(sd.remote_bytes == 0);
  CHECK(sn.remote_bytes > total / 2);
  CHECK(sd.remote_bytes * 2 <= sn.remote_bytes);
  CHECK(sd.remote_bytes * 2 <= sn2.remote_bytes);
  CHECK(work.load() == 3 * (tasks * (tasks - 1) / 2));
}

TEST_CASE("deal_scheduler: a long queue is stolen by near nodes, never across vicinities",
          "[deal][tsan]") {
  deal_options o;
  o.vicinities = {{0, 1}, {2, 3}};
  deal_scheduler s(line4x4(), o);
  const std::size_t n = scaled(2000, 600);
  std::vector<std::atomic<int>> ran_on(n);
  task_group g(s);
  for (std::size_t i = 0; i < n; ++i)
    g.run(
        [&s, &ran_on, i] {
          ran_on[i].store(s.current_node());
          auto t0 = std::chrono::steady_clock::now();
          while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(20)) {
          }
        },
        {.numa_node = 0});
  g.wait();
  settle(s, n);
  std::size_t per[4] = {0, 0, 0, 0}, bad = 0;
  for (auto& r : ran_on) {
    int x = r.load();
    if (x < 0 || x > 3) ++bad;
    else ++per[x];
  }
  auto st = s.deal_stats();
  INFO("per node " << per[0] << " " << per[1] << " " << per[2] << " " << per[3] << ", steals "
                   << st.steals_remote << ", refused " << st.steals_refused);
  CHECK(bad == 0);
  CHECK(per[2] == 0);
  CHECK(per[3] == 0);
  CHECK(per[0] + per[1] == n);
  CHECK(st.steals_remote == per[1]);
  CHECK(st.directed == std::vector<std::uint64_t>{n, 0, 0, 0});
}

TEST_CASE("deal_scheduler: random spawn trees lose no task and run none twice",
          "[deal][tsan]") {
  const std::size_t trees = 8, per_tree = scaled(25'000, 2'500);  // 200,000 tasks
  deal_scheduler s(line4x4());
  struct tree {
    std::vector<std::vector<std::uint32_t>> kids;
    std::vector<std::atomic<std::uint8_t>> hit;
    explicit tree(std::size_t n) : kids(n), hit(n) {}
  };
  std::vector<std::unique_ptr<tree>> ts;
  std::mt19937 rng(7);
  for (std::size_t k = 0; k < trees; ++k) {
    auto t = std::make_unique<tree>(per_tree);
    for (std::uint32_t i = 1; i < per_tree; ++i) {
      // Alternate bushy (random recursive) and deep (near-chain) shapes.
      std::uint32_t parent = (k % 2 == 0) ? std::uint32_t(rng() % i)
                                          : i - 1 - std::uint32_t(rng() % std::min<std::uint32_t>(i, 3));
      t->kids[parent].push_back(i);
    }
    ts.push_back(std::move(t));
  }
  std::vector<std::unique_ptr<task_group>> groups;
  for (auto& t : ts) {
    groups.push_back(std::make_unique<task_group>(s));
    task_group* g = groups.back().get();
    tree* tp = t.get();
    auto visit = std::make_shared<std::function<void(std::uint32_t)>>();
    std::weak_ptr<std::function<void(std::uint32_t)>> wv = visit;
    *visit = [tp, g, wv](std::uint32_t i) {
      tp->hit[i].fetch_add(1, std::memory_order_relaxed);
      auto v = wv.lock();
      for (std::uint32_t c : tp->kids[i]) {
        // Mix the three kinds of hint: none, a node, a D dealt elsewhere.
        const std::uint64_t D[4] = {0, 0, 0, 0};
        std::uint64_t Dd[4] = {0, 0, 0, 0};
        Dd[c % 4] = 2 * MiB;
        locality_hint h;
        if (c % 3 == 1) h.numa_node = int(c % 4);
        else if (c % 3 == 2) h.bytes_on_node = (c % 7 == 0) ? std::span<const std::uint64_t>(D)
                                                              : std::span<const std::uint64_t>(Dd);
        g->run([v, c] { (*v)(c); }, h);
      }
    };
    g->run([visit] { (*visit)(0); });
  }
  for (auto& g : groups) g->wait();
  bool ok = true;
  for (auto& t : ts)
    ok &= std::all_of(t->hit.begin(), t->hit.end(), [](const auto& x) { return x.load() == 1; });
  CHECK(ok);
  settle(s, trees * per_tree);
  auto st = s.stats();
  CHECK(st.tasks_run == trees * per_tree);
  CHECK(st.tasks_submitted == trees * per_tree);
  auto ds = s.deal_stats();
  std::uint64_t placed = ds.kept_local;
  for (auto x : ds.dealt) placed += x;
  for (auto x : ds.directed) placed += x;
  CHECK(placed == trees * per_tree);
}

TEST_CASE("deal_scheduler: parallel_for covers the range exactly once", "[deal][tsan]") {
  deal_scheduler s(line4x4());
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000),
                        scaled(100'000, 20'000)}) {
    for (std::size_t grain : {std::size_t(1), std::size_t(16), std::size_t(1000)}) {
      if (n / std::max<std::size_t>(grain, 1) > 20'000) continue;  // keep it quick
      std::vector<std::atomic<std::uint8_t>> hit(n);
      std::atomic<bool> short_block{false};
      s.parallel_for(n, grain, [&](std::size_t b, std::size_t e) {
        if (e - b < grain / 2 && n >= grain) short_block = true;
        for (std::size_t i = b; i < e; ++i) hit[i].fetch_add(1, std::memory_order_relaxed);
      });
      INFO("n " << n << " grain " << grain);
      CHECK(std::all_of(hit.begin(), hit.end(), [](const auto& x) { return x.load() == 1; }));
      CHECK_FALSE(short_block.load());
    }
  }
  // From inside tasks, nested.
  std::atomic<std::size_t> sum{0};
  task_group g(s);
  for (int t = 0; t < 8; ++t)
    g.run([&] {
      s.parallel_for(200, 8, [&](std::size_t b, std::size_t e) {
        s.parallel_for(e - b, 2, [&](std::size_t bb, std::size_t ee) { sum += ee - bb; });
      });
    });
  g.wait();
  CHECK(sum.load() == 8 * 200);
  CHECK(s.stats().parallel_fors >= 2 + 8);
}

TEST_CASE("deal_scheduler: parallel_for propagates the first exception after running every block",
          "[deal]") {
  deal_scheduler s(line4x4());
  std::atomic<std::size_t> done{0};
  CHECK_THROWS_AS(s.parallel_for(1000, 10,
                                 [&](std::size_t b, std::size_t e) {
                                   done += e - b;
                                   if (b == 0) throw std::runtime_error("block 0");
                                 }),
                  std::runtime_error);
  CHECK(done.load() == 1000);
  task_group g(s);
  g.run([] { throw std::logic_error("task"); });
  CHECK_THROWS_AS(g.wait(), std::logic_error);
}

TEST_CASE("deal_scheduler: n workers can run at once", "[deal]") {
  deal_scheduler s(line4x4());
  const unsigned n = s.concurrency();
  for (int round = 0; round < 3; ++round) {  // also after the workers went to sleep
    std::atomic<unsigned> arrived{0};
    std::atomic<bool> all_met{true};
    task_group g(s);
    for (unsigned i = 0; i < n; ++i)
      g.run(
          [&] {
            arrived++;
            auto t0 = std::chrono::steady_clock::now();
            while (arrived.load() < n) {  // a barrier: needs n tasks running together
              if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
                all_met = false;
                return;
              }
              std::this_thread::yield();
            }
          },
          {.numa_node = int(i % 4)});
    g.wait();
    INFO("round " << round);
    CHECK(all_met.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(round * 20));
  }
}

TEST_CASE("deal_scheduler: the destructor runs every submitted task", "[deal][tsan]") {
  std::atomic<std::size_t> done{0};
  {
    deal_scheduler s(line4x4());
    for (int i = 0; i < 500; ++i)
      s.submit([&done, &s, i] {
        if (i % 10 == 0) s.submit([&done] { done++; });  // spawned while stopping, maybe
        done++;
      }, {.numa_node = i % 4});
  }
  CHECK(done.load() == 550);
}

TEST_CASE("deal_scheduler: works unpinned, and on the current topology", "[deal][tsan]") {
  deal_options o;
  o.pin = false;
  deal_scheduler s(topology::synthetic(2, 1), o);
  CHECK(s.concurrency() == 2);
  std::atomic<std::size_t> sum{0};
  s.parallel_for(1000, 10, [&](std::size_t b, std::size_t e) { sum += e - b; });
  CHECK(sum.load() == 1000);
  deal_scheduler c;  // topology::current()
  CHECK(c.concurrency() == topology::current().total_cores());
  std::atomic<std::size_t> done{0};
  for (int i = 0; i < 100; ++i) c.submit([&] { done++; });
  CHECK(wait_for_count(done, 100));
}

TEST_CASE("deal_scheduler: an idle scheduler uses almost no CPU", "[deal]") {
  deal_scheduler s(line4x4());  // 16 workers
  std::atomic<std::size_t> sum{0};
  task_group g(s);
  for (int i = 0; i < 64; ++i)
    g.run([&] { s.parallel_for(100, 10, [&](std::size_t b, std::size_t e) { sum += e - b; }); },
          {.numa_node = i % 4});
  g.wait();
  REQUIRE(sum.load() == 6400);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // settle
  double c0 = sinew_test::cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double used = sinew_test::cpu_seconds() - c0;
  INFO("CPU seconds used in 0.5 s idle: " << used);
  CHECK(used < 0.025);  // 5% of one core
  std::atomic<std::size_t> done{0};
  s.submit([&] { done++; }, {.numa_node = 3});
  CHECK(wait_for_count(done, 1, std::chrono::seconds(10)));
}
