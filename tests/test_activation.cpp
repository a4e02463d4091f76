// When stages and farm replicas start: the farm replica rule, pacing of
// cheap farms and serial stages by the pops and pushes that wake them,
// channel capacities that grow for small units, and serial chains that run
// on one worker (a run's control is in test_run_control.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "test_common.hpp"

#include "../engine/replica_rule.hpp"  // the farm replica rule, a pure function
#include "../engine/wake_rule.hpp"     // when making room wakes a producer, a pure function
#include "../engine/channel.hpp"       // a farm's stage and its input, to apply the replica rule
#include "../engine/stage.hpp"

using namespace sinew;
using namespace sinew_test;

TEST_CASE("a farm starts another replica only when its queued units would wait longer than one takes to start",
          "[runtime]") {
  using sinew::detail::enough_replicas;
  // Nothing running: always start one.
  CHECK_FALSE(enough_replicas(0, 100, 0));
  CHECK_FALSE(enough_replicas(1, 5000, 0));
  // Cost not known yet (the first units): a replica per queued unit.
  CHECK_FALSE(enough_replicas(1, UINT32_MAX, 15));
  CHECK(enough_replicas(0, UINT32_MAX, 3));
  // Fine-grained units: a replica more only once the queue holds more than
  // 2 us of work per running replica (16 units of 0.5 us behind 4 do not).
  CHECK(enough_replicas(16, 500, 4));
  CHECK_FALSE(enough_replicas(17, 500, 4));
  CHECK(enough_replicas(64, 0, 1));  // units that cost nothing: one replica keeps up
  // 5 us units: 2 queued behind 5 running wait 2 us, 3 wait 3 us.
  CHECK(enough_replicas(2, 5000, 5));
  CHECK_FALSE(enough_replicas(3, 5000, 5));
  // A source slower than 16 replicas of 5 us units keeps a queue of one or
  // two: the running replicas take them, no task per unit.
  CHECK(enough_replicas(1, 5000, 3));
  // Costly units: any queued unit starts a replica.
  CHECK_FALSE(enough_replicas(1, 50000, 16));
  CHECK_FALSE(enough_replicas(1, 1000000000, 64));
}

TEST_CASE("a farm of fine-grained units runs as many replicas as keep up with its serial producer", "[runtime]") {
  using sinew::detail::replicas_keep_up;
  // One spare beyond cost / producer: 1.5 us units behind a 750 ns source.
  CHECK(replicas_keep_up(1500, 750, 3));
  CHECK_FALSE(replicas_keep_up(1500, 750, 2));
  CHECK(replicas_keep_up(6000, 750, 9));
  CHECK_FALSE(replicas_keep_up(6000, 750, 8));
  CHECK(replicas_keep_up(100, 5000, 2));  // a slow producer: two replicas
  // Unknown costs, or costly units (a burst is then taken at once): no limit.
  CHECK_FALSE(replicas_keep_up(1500, UINT32_MAX, 15));
  CHECK_FALSE(replicas_keep_up(UINT32_MAX, 750, 15));
  CHECK_FALSE(replicas_keep_up(sinew::detail::fine_grain_ns, 1000000, 15));

  // The rule as a farm's stage applies it: 15 units of 20 us queued behind
  // a serial producer of one unit every 100 us (a burst). By queue length
  // alone every running replica would want another; two keep up.
  using sinew::detail::channel;
  using sinew::detail::stage_rt;
  stage_rt producer, farm;
  producer.max_active = 1;
  farm.max_active = 8;
  channel c(channel::kind::mpmc, 64, -1);
  c.connect(&producer, &farm);
  farm.in = &c;
  std::vector<work_unit> units(15);
  for (work_unit& u : units) {
    REQUIRE(c.try_reserve());
    c.push(&u);
  }
  farm.unit_cost_ns = 20000;
  CHECK_FALSE(farm.enough_running(1));  // the producer's rate not known yet: by queue length
  producer.unit_cost_ns = 100000;
  CHECK_FALSE(farm.enough_running(1));
  CHECK(farm.enough_running(2));
  farm.unit_cost_ns = 60000;  // costly units: a replica per queued unit, the burst taken at once
  CHECK_FALSE(farm.enough_running(7));
  farm.unit_cost_ns = 20000;
  for (int i = 0; i < 20; ++i) {  // half full: the replicas do not keep up after all
    REQUIRE(c.try_reserve());
    c.push(&units[0]);
  }
  CHECK_FALSE(farm.enough_running(2));
}

TEST_CASE("a farm behind a cheap stage runs its replicas at once", "[runtime]") {
  // Each replica waits until 3 have started in its round: with fewer than 3
  // replicas running together a round times out. After the first timeout the
  // rest stop waiting, so a failing run stays short.
  struct meet {
    std::atomic<int>* arrived;
    std::atomic<int>* timeouts;
    void operator()(int x, int* y) const {
      int me = arrived->fetch_add(1) + 1;
      int round = (me - 1) / 3;
      auto t0 = std::chrono::steady_clock::now();
      while (timeouts->load() == 0 && arrived->load() < (round + 1) * 3) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300)) {
          (*timeouts)++;
          break;
        }
        std::this_thread::yield();
      }
      *y = x;
    }
  };
  std::atomic<int> arrived{0}, timeouts{0};
  steal_scheduler s(3);
  auto items = make_items(300, 1);
  std::vector<std::vector<int>> out;
  // Small queues: the cheap first stage ends many activations (it is then
  // known to be cheap and defers waking serial consumers, but not the farm).
  graph g(pipeline(map<inc>(), farm(map(meet{&arrived, &timeouts}), 3)), {.scheduler = &s, .capacity = 3});
  g.run(items, out).get();
  CHECK(out.size() == items.size());
  CHECK(timeouts.load() == 0);
}

TEST_CASE("channels of default capacity grow for small units, not for large ones or given capacities", "[runtime]") {
  auto run_stats_of = [](const node& tree, std::size_t len, graph_options o) {
    auto items = make_items(200, len);
    std::vector<std::vector<int>> out;
    graph g(tree, o);
    auto f = g.run(items, out);
    f.get();
    CHECK(out.size() == items.size());
    return f.stats();
  };
  const auto tree = pipeline(map<inc>(), farm(map<twice>(), 3), map<inc>());
  SECTION("small units: every channel holds up to 64 units, the bound on units alive follows") {
    auto st = run_stats_of(tree, 4, {});
    for (const auto& s : st.stages) {
      CHECK(s.capacity == 64);
      CHECK(s.high_water <= s.capacity);
    }
    CHECK(st.units_alive_max <= st.capacity_total + 2);
  }
  SECTION("units of 64 KiB: 256 KiB per channel, so 4 (larger defaults, 2 x the farm's width, stay)") {
    auto st = run_stats_of(tree, 8192, {});  // 32 KiB in + 32 KiB out
    REQUIRE(st.stages.size() == 4);
    CHECK(st.stages[0].capacity == 4);  // 2 -> 4
    CHECK(st.stages[1].capacity == 6);  // into the farm
    CHECK(st.stages[2].capacity == 6);  // out of the farm
    CHECK(st.stages[3].capacity == 4);  // the sink's, 2 -> 4
  }
  SECTION("a given capacity is kept") {
    auto st = run_stats_of(tree, 4, {.capacity = 3});
    for (const auto& s : st.stages) CHECK(s.capacity == 3);
  }
}

TEST_CASE("a pop from a full queue wakes its producer at once, at half empty for a cheap farm, at the end for a cheap serial stage",
          "[runtime]") {
  using sinew::detail::wake_producer_on_room;
  using sinew::detail::room_wake;
  CHECK(wake_producer_on_room(true, true, true, 32) == room_wake::consumer_leave);  // runs when the consumer's activation ends
  CHECK(wake_producer_on_room(false, true, true, 32) == room_wake::half_empty);     // a cheap farm refills half the queue
  CHECK(wake_producer_on_room(false, true, true, 8) == room_wake::half_empty);
  CHECK(wake_producer_on_room(false, true, true, 7) == room_wake::first_pop);       // too few units in half the queue
  CHECK(wake_producer_on_room(true, false, true, 32) == room_wake::first_pop);      // costly: works beside the consumer
  CHECK(wake_producer_on_room(false, false, true, 32) == room_wake::first_pop);     // a costly farm's replicas wait for room
  CHECK(wake_producer_on_room(true, true, false, 32) == room_wake::first_pop);      // a farm consumer may run long
  CHECK(wake_producer_on_room(false, false, false, 32) == room_wake::first_pop);
}

TEST_CASE("a serial consumer sets a cheap farm's pace when its pop at half empty wakes the farm", "[runtime]") {
  using sinew::detail::consumer_sets_pace;
  CHECK(consumer_sets_pace(true, true, 32, false));
  CHECK(consumer_sets_pace(true, true, 8, false));
  CHECK_FALSE(consumer_sets_pace(true, true, 32, true));   // an ordered farm: its queue counts units in the making
  CHECK_FALSE(consumer_sets_pace(true, true, 7, false));   // woken at the first pop from full
  CHECK_FALSE(consumer_sets_pace(false, true, 32, false)); // a costly farm
  CHECK_FALSE(consumer_sets_pace(true, false, 32, false)); // a farm consumer
}

TEST_CASE("a push wakes a farm at once unless one replica keeps up with a cheap producer", "[runtime]") {
  using sinew::detail::wake_farm_on_push;
  constexpr std::uint32_t cheap = 2000, unknown = UINT32_MAX;
  CHECK_FALSE(wake_farm_on_push(300, 200, false, cheap));  // the producer's leave() runs it
  CHECK_FALSE(wake_farm_on_push(300, 300, false, cheap));
  CHECK(wake_farm_on_push(300, 200, true, cheap));         // half full: replicas may be needed
  CHECK(wake_farm_on_push(300, 1500, false, cheap));       // slower than its producer
  CHECK(wake_farm_on_push(5000, 200, false, cheap));       // a costly producer: the farm runs meanwhile
  CHECK(wake_farm_on_push(unknown, 200, false, cheap));    // costs not measured yet: as before
  CHECK(wake_farm_on_push(300, unknown, false, cheap));
}

/// Units of one int each: 0, 1, ..., n - 1.
source counting(int n) {
  return generate([n](unit_builder& b) {
    if (b.seq() >= std::uint64_t(n)) return false;
    b.set_shape(shape::d1(1));
    b.add<int>()[0] = int(b.seq());
    return true;
  });
}

TEST_CASE("cheap serial stages on queues of one unit deliver every unit in order under every policy",
          "[runtime][tsan]") {
  // Every pop is from a full queue, and a cheap producer is left to the
  // consumer's leave(): a lost wake-up would hang here.
  const int n = 3000;
  for (const char* p : {"tbb", "steal", "deal"}) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 3, .pin = false});
    graph g(pipeline(map<inc>(), map<inc>(), map<inc>()), {.scheduler = s.get(), .capacity = 1});
    std::vector<int> got;
    within(std::chrono::seconds(60), "a pipeline of capacity 1", [&] {
      g.run(counting(n), for_each([&](const work_unit& u) { got.push_back(u.input<int>(0)[0]); })).get();
    });
    REQUIRE(got.size() == std::size_t(n));
    std::size_t bad = 0;
    for (int i = 0; i < n; ++i) bad += got[std::size_t(i)] != i + 3;
    CHECK(bad == 0);
  }
}

TEST_CASE("a cheap farm before a slower serial stage delivers every unit at every queue capacity under every policy",
          "[runtime][tsan]") {
  // From capacity 8 the farm is woken by the pop that leaves its output
  // half full (below, by the first pop from full): a lost wake-up would
  // hang here.
  const int n = 2000;
  struct slow_inc {
    void operator()(int x, int* y) const {
      for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(3);) {
      }
      *y = x + 1;
    }
  };
  for (const char* p : {"tbb", "steal", "deal"})
    for (std::size_t cap : {1, 2, 3, 8, 9, 16}) {
      INFO(p << ", capacity " << cap);
      auto s = make_scheduler(p, {.threads = 3, .pin = false});
      graph g(pipeline(farm(map<inc>(), 3, farm_order::unordered), map<slow_inc>()), {.scheduler = s.get(), .capacity = cap});
      std::vector<int> got;
      within(std::chrono::seconds(60), "a cheap farm before a slower stage", [&] {
        g.run(counting(n), for_each([&](const work_unit& u) { got.push_back(u.input<int>(0)[0]); })).get();
      });
      REQUIRE(got.size() == std::size_t(n));
      std::sort(got.begin(), got.end());
      std::size_t bad = 0;
      for (int i = 0; i < n; ++i) bad += got[std::size_t(i)] != i + 2;
      CHECK(bad == 0);
    }
}

TEST_CASE("a serial chain runs on one worker while its stages cost less together than the slowest one and a hop",
          "[runtime]") {
  using sinew::detail::chain_runs_together;
  constexpr std::uint32_t hop = 400;
  CHECK(chain_runs_together(200, 60, false, hop));          // 5 stages of 40 ns: 140 ns more than the slowest
  CHECK_FALSE(chain_runs_together(2000, 200, true, hop));   // ten 200 ns stages gain from ten cores
  CHECK_FALSE(chain_runs_together(800, 200, false, hop));   // 600 ns more: split
  CHECK(chain_runs_together(800, 200, true, hop));          // once together, up to twice the hop
  CHECK(chain_runs_together(5000, 4900, false, hop));       // one costly stage among cheap ones
  CHECK(chain_runs_together(0, 0, false, hop));             // nothing measured yet
}

namespace {
/// Busy for `ns` nanoseconds, then +1.
struct slow_inc {
  std::uint64_t ns;
  void operator()(int& x) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < end) {
    }
    ++x;
  }
};

/// Tasks the scheduler was given for a run of `n` units through three
/// serial stages of `ns` each on two workers, queues of 8 units.
std::uint64_t chain_tasks(std::uint64_t ns, int n) {
  tbb_scheduler s(2);
  graph g(pipeline(map(slow_inc{ns}), map(slow_inc{ns}), map(slow_inc{ns})), {.scheduler = &s, .capacity = 8, .scheduler_stats = true});
  long sum = 0;
  auto f = g.run(generate([n](unit_builder& b) {
                   if (b.seq() >= std::uint64_t(n)) return false;
                   b.set_shape(shape::d1(1));
                   b.add<int>()[0] = int(b.seq());
                   return true;
                 }),
                 for_each([&](const work_unit& u) { sum += u.input<int>(0)[0]; }));
  f.get();
  CHECK(sum == long(n) * (n - 1) / 2 + 3L * n);
  return f.stats().scheduler.tasks_submitted;
}
}  // namespace

// [chain], not [runtime]: the costs it relies on grow several times under
// the sanitizers, which would split the cheap chain.
TEST_CASE("a chain of cheap serial stages runs on one worker and a costly one hands its stages to other workers",
          "[chain]") {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  WARN("SINEW-SKIP: the costs this test relies on grow several times under the sanitizers");  // ctest: skipped
  return;
#endif
  // Cheap: the stage that drained its input runs its producer on the same
  // worker once its consumer has run there; no task per refill.
  // Up to three runs: a run whose worker another process preempts for
  // milliseconds measures costly stages and rightly splits the chain (under
  // ctest -j on two cores); a broken chain makes a task per refill in all.
  const int n = 20000;
  std::uint64_t cheap = UINT64_MAX;
  for (int attempt = 0; attempt < 3 && cheap >= std::uint64_t(n) / 8 / 10; ++attempt)
    cheap = std::min(cheap, chain_tasks(0, n));
  CHECK(cheap < std::uint64_t(n) / 8 / 10);  // a refill every 8 units made a task each before
  // Costly (three 40 us stages): producers are woken as tasks, for parallelism.
  const int m = 400;
  const std::uint64_t costly = chain_tasks(40000, m);
  CHECK(costly >= std::uint64_t(m) / 8);
}
