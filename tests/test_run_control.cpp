// A run's control: end of stream, back pressure, errors, cancellation and
// stop, running a graph again, idleness, and when stages and farm replicas
// start (the skeletons' results are in test_runtime.cpp).
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "test_common.hpp"

#include "../engine/replica_rule.hpp"  // the farm replica rule, a pure function
#include "../engine/wake_rule.hpp"     // when making room wakes a producer, a pure function
#include "../engine/channel.hpp"       // a farm's stage and its input, to apply the replica rule
#include "../engine/stage.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

struct throw_at {
  void operator()(int x, int* y) const {
    if (x == 7777) throw std::runtime_error("bad value 7777");
    *y = x;
  }
};

struct slow_copy {
  void operator()(int x, int* y) const {
    volatile int s = 0;
    for (int i = 0; i < 200; ++i) s = s + i;
    *y = x + s - s;
  }
};

}  // namespace

TEST_CASE("end of stream reaches the sink exactly once, after the last unit", "[runtime][tsan]") {
  std::atomic<int> ends{0};
  std::atomic<std::uint64_t> at_end{0};
  std::uint64_t got = 0;
  auto items = make_items(50000, 1);
  graph g(pipeline(farm(map<inc>(), 4, farm_order::unordered), farm(map<twice>(), 2)));
  g.run(from(items), for_each([&](const work_unit&) { ++got; },
                              [&] {
                                ends++;
                                at_end = got;
                              }))
      .get();
  CHECK(ends.load() == 1);
  CHECK(at_end.load() == items.size());
}

TEST_CASE("back pressure bounds the units alive", "[runtime][tsan]") {
  // A fast source, a slow farm: the source must be held back.
  std::atomic<std::size_t> produced{0}, consumed{0}, max_gap{0};
  auto src = generate([&](unit_builder& b) {
    std::size_t p = produced.load();
    if (p == 20000) return false;
    b.set_shape(shape::d1(8));
    auto v = b.add<int>();
    for (std::size_t i = 0; i < 8; ++i) v[i] = int(p + i);
    produced = p + 1;
    std::size_t gap = p + 1 - consumed.load();
    if (gap > max_gap) max_gap = gap;
    return true;
  });
  graph g(pipeline(map<inc>(), farm(map<slow_copy>(), 3), map<twice>()), {.capacity = 4});
  auto f = g.run(src, for_each([&](const work_unit&) { consumed++; }));
  f.get();
  auto st = f.stats();
  std::size_t workers = 0;
  for (auto& s : st.stages) workers += s.concurrency;
  INFO("alive max " << st.units_alive_max << ", capacity " << st.capacity_total << ", workers " << workers);
  CHECK(st.units_out == 20000);
  CHECK(st.units_alive_max <= st.capacity_total + 2);  // reservation invariant
  CHECK(st.units_alive_max <= st.capacity_total + workers);
  CHECK(max_gap.load() <= st.capacity_total + 2);
  for (auto& s : st.stages) CHECK(s.high_water <= s.capacity);
}

TEST_CASE("a throwing leaf fails the run with its node path and releases every unit", "[runtime][tsan]") {
  auto before = buffer_pool::global().stats().bytes_in_use;
  auto items = make_items(30000, 1);  // item 7777 holds 7777
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), farm(map<throw_at>(), 3).named("checker"), map<twice>()));
  auto f = g.run(items, out);
  try {
    f.get();
    FAIL("no exception");
  } catch (const node_error& e) {
    CHECK(e.path() == "pipeline[1]/checker/map<throw_at>");
    CHECK(std::string(e.what()) == "pipeline[1]/checker/map<throw_at>: bad value 7777");
    CHECK_THROWS_AS(std::rethrow_exception(e.cause()), std::runtime_error);
  }
  auto st = f.stats();
  CHECK(st.units_alive == 0);
  CHECK(st.units_out < items.size());
  CHECK(buffer_pool::global().stats().bytes_in_use == before);
}

TEST_CASE("a throwing source or sink fails the run", "[runtime]") {
  graph g(map<inc>());
  int n = 0;
  auto bad_src = generate([&](unit_builder& b) {
    if (++n == 100) throw std::runtime_error("source broke");
    b.set_shape(shape::d1(1));
    b.add<int>()[0] = 1;
    return true;
  });
  CHECK_THROWS_WITH(g.run(bad_src).get(), "source(generator): source broke");
  auto items = make_items(1000, 1);
  CHECK_THROWS_WITH(g.run(from(items), for_each([](const work_unit& u) {
                       if (u.seq() == 500) throw std::logic_error("sink broke");
                     })).get(),
                    "sink(for_each): sink broke");
}

TEST_CASE("wrong buffer types are reported with the node path", "[runtime]") {
  std::vector<std::vector<double>> in(3, std::vector<double>(4, 1.0));
  graph g(pipeline(map<inc>(), map<twice>()));
  CHECK_THROWS_WITH(g.run(from(in)).get(), Catch::Contains("pipeline[0]/map<inc>") && Catch::Contains("8-byte"));
  struct to_double {
    void operator()(int x, double* y) const { *y = x; }
  };
  CHECK_THROWS_AS(graph(pipeline(map<to_double>(), map<inc>())), graph_error);
  try {
    graph bad(pipeline(map<to_double>(), map<inc>()));
  } catch (const graph_error& e) {
    CHECK(e.path() == "pipeline[1]/map<inc>");
  }
  CHECK_THROWS_AS(farm(map<inc>(), 0), graph_error);
  CHECK_THROWS_AS(for_loop(map<inc>(), 0), graph_error);
  CHECK_THROWS_AS(graph(loop(map<to_double>(), [](const layer&, std::size_t) { return true; })), graph_error);
}

TEST_CASE("cancel stops an unbounded stream and releases every unit", "[runtime][tsan]") {
  for (auto mode : {source_mode::task, source_mode::thread}) {
    std::atomic<std::uint64_t> made{0};
    auto src = generate(
        [&](unit_builder& b) {
          b.set_shape(shape::d1(16));
          auto v = b.add<int>();
          for (int i = 0; i < 16; ++i) v[std::size_t(i)] = i;
          made++;
          return true;  // forever
        },
        mode);
    graph g(pipeline(map<inc>(), farm(map<slow_copy>(), 2)));
    auto f = g.run(src, discard());
    while (made.load() < 2000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    f.cancel();
    REQUIRE(f.wait_for(std::chrono::seconds(20)));
    CHECK_THROWS_AS(f.get(), sinew::cancelled);
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("a stop token cancels the run", "[runtime]") {
  auto src = generate([&](unit_builder& b) {
    b.set_shape(shape::d1(4));
    auto d = b.add<int>();  // pool memory: uninitialised until written
    for (int i = 0; i < 4; ++i) d[i] = i;
    return !b.stop_requested();
  });
  std::stop_source stop;
  graph g(pipeline(map<inc>(), farm(map<slow_copy>(), 2)));
  auto f = g.run(src, discard(), stop.get_token());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop.request_stop();
  REQUIRE(f.wait_for(std::chrono::seconds(20)));
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
  CHECK(f.stats().units_alive == 0);
}

TEST_CASE("stop drains every accepted unit", "[runtime][tsan]") {
  for (auto mode : {source_mode::task, source_mode::thread}) {
    auto src = generate(
        [&](unit_builder& b) {
          b.set_shape(shape::d1(4));
          auto v = b.add<int>();
          for (int i = 0; i < 4; ++i) v[std::size_t(i)] = i;
          return true;
        },
        mode);
    std::atomic<std::uint64_t> got{0};
    graph g(pipeline(map<inc>(), farm(map<slow_copy>(), 3)));
    auto f = g.run(src, for_each([&](const work_unit&) { got++; }));
    while (got.load() < 1000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    f.stop();
    f.get();
    auto st = f.stats();
    CHECK(st.units_in == st.units_out);
    CHECK(st.units_out == got.load());
    CHECK(st.units_alive == 0);
  }
}

TEST_CASE("a graph can be run again, and twice at once", "[runtime][tsan]") {
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)));
  auto a = make_items(5000, 2), b = make_items(7000, 3);
  std::vector<std::vector<int>> oa, ob;
  auto fa = g.run(a, oa);
  auto fb = g.run(b, ob);
  fa.get();
  fb.get();
  CHECK(oa.size() == 5000);
  CHECK(ob.size() == 7000);
  CHECK(ob[6999][2] == 2 * ((6999 * 3 + 2) % 100000 + 1));
  std::vector<std::vector<int>> oc;
  g.run(a, oc).get();
  CHECK(oc == oa);
}

TEST_CASE("a run whose future is dropped before it starts runs to its end", "[runtime][tsan]") {
  // The one worker is busy, so the run's first task waits in the queue
  // while its future goes away: the run must still produce every unit.
  // (Declared before the scheduler, whose destructor waits for the run's
  // last tasks.)
  auto items = make_items(300, 4);
  std::atomic<std::size_t> seen{0};
  auto sched = make_scheduler(GENERATE(as<std::string>{}, "tbb", "steal"), {.threads = 1, .pin = false});
  std::mutex m;
  std::condition_variable cv;
  bool release = false, blocking = false;
  sched->submit([&] {
    std::unique_lock<std::mutex> lk(m);
    blocking = true;
    cv.notify_all();
    cv.wait(lk, [&] { return release; });
  });
  {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return blocking; });
  }
  graph g(pipeline(map<inc>(), map<twice>()), {.scheduler = sched.get()});
  g.run(from(items), for_each([&](const work_unit&) { seen.fetch_add(1); }));  // the future is dropped here
  {
    std::lock_guard<std::mutex> lk(m);
    release = true;
  }
  cv.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen.load() < items.size() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(seen.load() == items.size());
}

TEST_CASE("a one-unit run awaited by get() runs on the caller and no worker runs a task for it", "[runtime][tsan]") {
  // The start's backup check waits its grace period and finds the start
  // taken: no task reaches the workers, under every policy.
  auto sched = make_scheduler(GENERATE(as<std::string>{}, "tbb", "steal", "deal"), {.threads = 2, .pin = false});
  graph g(pipeline(map<inc>(), map<twice>()), {.scheduler = sched.get()});
  auto items = make_items(1, 4);
  std::vector<std::vector<int>> out;
  g.run(from(items), into(out)).get();  // the scheduler's first tasks, if any, are over
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::uint64_t before = sched->stats().tasks_run;
  for (int i = 0; i < 20; ++i) {
    out.clear();
    g.run(from(items), into(out)).get();
    REQUIRE(out.size() == 1);
    CHECK(out[0][0] == (items[0][0] + 1) * 2);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the checks' grace periods are over
  // A caller preempted for longer than the grace period between run() and
  // get() leaves its start to the check, which submits it: at most a few
  // such runs, where waking a worker for every start ran one task a run.
  CHECK(sched->stats().tasks_run - before <= 3);
}

TEST_CASE("an idle graph waiting on its source uses almost no CPU", "[runtime]") {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  int sent = 0;
  auto src = generate([&](unit_builder& b) {
    if (sent == 10) {
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, [&] { return release; });  // a source with nothing to say
      return false;
    }
    ++sent;
    b.set_shape(shape::d1(4));
    auto d = b.add<int>();  // pool memory: uninitialised until written
    for (int i = 0; i < 4; ++i) d[i] = sent + i;
    return true;
  }, source_mode::thread);
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2), map<inc>()));
  auto f = g.run(src, discard());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the workers go to sleep
  double c0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double used = cpu_seconds() - c0;
  {
    std::lock_guard<std::mutex> lk(m);
    release = true;
  }
  cv.notify_all();
  f.get();
  INFO("CPU seconds used while idle: " << used);
  CHECK(used < 0.05);
  CHECK(f.stats().units_out == 10);
}

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

TEST_CASE("get() runs a graph's stages on the calling thread while the workers are busy", "[runtime][tsan]") {
  // The only worker is held by a task until the run has ended: the run can
  // only end if the caller of get() runs its source, map and sink itself.
  tbb_scheduler s(1);
  std::atomic<bool> release{false}, held{false};
  task_group hold(s);
  hold.run([&] {
    held = true;
    while (!release.load()) std::this_thread::yield();
  });
  while (!held.load()) std::this_thread::yield();
  struct record_thread {
    std::thread::id* where;
    void operator()(int x, int* y) const {
      *where = std::this_thread::get_id();
      *y = x + 1;
    }
  };
  std::thread::id leaf_thread, sink_thread;
  std::vector<int> x(100, 1), y(100, 0);
  graph g(map(record_thread{&leaf_thread}), {.scheduler = &s});
  auto f = g.run(from_arrays(x), for_each([&](const work_unit& u) {
                   sink_thread = std::this_thread::get_id();
                   auto v = u.input<int>(0);
                   std::copy(v.begin(), v.end(), y.begin());
                 }));
  f.get();
  release = true;
  hold.wait();
  CHECK(leaf_thread == std::this_thread::get_id());
  CHECK(sink_thread == std::this_thread::get_id());
  CHECK(y == std::vector<int>(100, 2));
  CHECK(f.stats().units_out == 1);
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

TEST_CASE("an ordered farm that fails while later units wait for an earlier one releases every unit", "[runtime][tsan]") {
  // Unit 40 is slow and throws: the units after it finish first and wait in
  // the reorder channel for a unit that never comes.
  struct slow_throw {
    void operator()(int x, int* y) const {
      if (x == 40) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        throw std::runtime_error("unit 40");
      }
      *y = x;
    }
  };
  auto before = buffer_pool::global().stats().bytes_in_use;
  auto items = make_items(400, 1);
  std::vector<std::vector<int>> out;
  graph g(pipeline(farm(map<slow_throw>(), 4), map<inc>()));
  auto f = g.run(items, out);
  CHECK_THROWS_AS(f.get(), node_error);
  auto st = f.stats();
  CHECK(st.units_alive == 0);
  CHECK(st.units_out <= 40);  // nothing after the failed unit is delivered out of order
  CHECK(buffer_pool::global().stats().bytes_in_use == before);
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
  graph g(pipeline(map(slow_inc{ns}), map(slow_inc{ns}), map(slow_inc{ns})), {.scheduler = &s, .capacity = 8});
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
  // Cheap: the stage that drained its input runs its producer on the same
  // worker once its consumer has run there; no task per refill.
  const int n = 20000;
  const std::uint64_t cheap = chain_tasks(0, n);
  CHECK(cheap < std::uint64_t(n) / 8 / 10);  // a refill every 8 units made a task each before
  // Costly (three 40 us stages): producers are woken as tasks, for parallelism.
  const int m = 400;
  const std::uint64_t costly = chain_tasks(40000, m);
  CHECK(costly >= std::uint64_t(m) / 8);
}
