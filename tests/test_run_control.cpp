// A run's control: end of stream, back pressure, errors, cancellation and
// stop, running a graph again, idleness, and get() on the caller (when
// stages and farm replicas start is in test_activation.cpp; the skeletons'
// results in test_runtime.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "test_common.hpp"

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
