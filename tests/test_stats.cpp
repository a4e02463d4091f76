// Run statistics: exact unit and byte counts per stage, waits on input and
// output around a slow stage, queue high-water marks, unit latency, map
// chunks, stage counters, and polling stats() while a run goes on.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "test_common.hpp"
#include "../engine/latency_histogram.hpp"  // the histogram behind run_stats::latency

using namespace sinew;
using namespace sinew_test;

namespace {

// An increment that sleeps `Us` microseconds first.
template <unsigned Us>
struct sleepy_inc {
  void operator()(int x, int* y) const {
    std::this_thread::sleep_for(std::chrono::microseconds(Us));
    *y = x + 1;
  }
};
using slow_inc = sleepy_inc<300>;
// Long enough that the other stages of a pipeline, on the one worker of two
// it leaves free, always catch up (also under ThreadSanitizer), so the
// stage after it waits for input.
using slower_inc = sleepy_inc<2000>;

std::atomic<std::uint64_t> chunk_calls{0};
struct count_chunks {
  void operator()(chunk c, in<int> x, out<int> y) const {
    chunk_calls.fetch_add(1);
    for (std::size_t i = c.begin; i < c.end; ++i) y(i) = x(i) + 1;
  }
};

struct counting_inc {
  void operator()(int x, int* y) const {
    add_stage_counter("seen", 1);
    add_stage_counter("twice", 2);
    *y = x + 1;
  }
};

}  // namespace

TEST_CASE("stats count units and bytes per stage exactly", "[stats][tsan]") {
  const std::size_t n = 300, len = 7;
  auto in = make_items(n, len);
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), farm(map<twice>(), 3), map<inc>()));
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  const std::uint64_t bytes = n * len * sizeof(int);
  REQUIRE(st.stages.size() == 4);  // three stages and the sink
  for (const stage_stats& s : st.stages) {
    INFO(s.path);
    CHECK(s.units == n);
    CHECK(s.bytes == bytes);
    CHECK(s.high_water <= s.capacity);
    CHECK(s.chunks == 0);  // units of 7 ints are never split
  }
  CHECK(st.bytes_in == bytes);
  CHECK(st.bytes_out == bytes);
  CHECK(st.done);
  CHECK(st.units_in == n);
  CHECK(st.units_out == n);
}

TEST_CASE("the scheduler's counters over a run are read only when graph_options::scheduler_stats asks", "[stats][tsan]") {
  auto in = make_items(50, 3);
  std::vector<std::vector<int>> out;
  tbb_scheduler s(2);
  graph quiet(map<inc>(), {.scheduler = &s});
  auto f = quiet.run(in, out);
  f.get();
  CHECK(f.stats().units_out == 50);
  CHECK(f.stats().scheduler.workers.empty());
  CHECK(f.stats().scheduler.tasks_submitted == 0);
  graph counted(map<inc>(), {.scheduler = &s, .scheduler_stats = true});
  auto h = counted.run(in, out);
  h.get();
  CHECK(h.stats().scheduler.workers.size() == s.stats().workers.size());
  CHECK(h.stats().scheduler.tasks_submitted > 0);
}

TEST_CASE("stats count the bytes of every input buffer", "[stats]") {
  std::vector<int> a(1000, 3), b(1000, 4), s, d;
  graph g(map<add_pair>());
  auto f = g.run(from_arrays(a, b), into_arrays(s, d));
  f.get();
  run_stats st = f.stats();
  CHECK(st.bytes_in == 2 * 1000 * sizeof(int));
  CHECK(st.stages[0].bytes == 2 * 1000 * sizeof(int));
  CHECK(st.bytes_out == 2 * 1000 * sizeof(int));  // the sink reads both results
}

TEST_CASE("a slow stage makes the stage before wait on output and the one after wait on input", "[stats][tsan]") {
  const std::size_t n = 60;
  auto in = make_items(n, 4);
  std::vector<std::vector<int>> out;
  scheduler& s = default_scheduler();  // under ThreadSanitizer: steal (TBB is not instrumented)
  graph g(pipeline(map<inc>(), map<slower_inc>(), map<inc>()), {.scheduler = &s, .capacity = 2});
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  REQUIRE(st.stages.size() == 4);
  CHECK(st.stages[0].wait_out_ns > 0);  // back pressure from the slow stage
  CHECK(st.stages[2].wait_in_ns > 0);   // starved by the slow stage
  CHECK(st.stages[1].busy_ns > 0);
  for (const stage_stats& x : st.stages) {
    INFO(x.path);
    CHECK(x.high_water <= x.capacity);
    CHECK(x.high_water >= 1);
    CHECK(x.units == n);
  }
  REQUIRE(out.size() == n);
  CHECK(out[5][0] == in[5][0] + 3);
}

TEST_CASE("unit latency percentiles are ordered and cover every timed unit", "[stats]") {
  const std::size_t n = 500;
  auto in = make_items(n, 16);
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), map<twice>()), {.latency_every = 1});
  auto f = g.run(in, out);
  f.get();
  latency_stats l = f.stats().latency;
  CHECK(l.samples == n);
  CHECK(l.p50_ns > 0);
  CHECK(l.p50_ns <= l.p90_ns);
  CHECK(l.p90_ns <= l.p99_ns);
  CHECK(l.p99_ns <= l.max_ns);

  // Sampled: one unit in 16 (seq 0, 16, 32, ...).
  graph g16(pipeline(map<inc>(), map<twice>()), {.latency_every = 16});
  auto f16 = g16.run(in, out);
  f16.get();
  CHECK(f16.stats().latency.samples == (n + 15) / 16);

  graph g0(map<inc>(), {.latency_every = 0});
  auto f0 = g0.run(in, out);
  f0.get();
  CHECK(f0.stats().latency.samples == 0);
  CHECK(f0.stats().latency.p99_ns == 0);
}

TEST_CASE("a cleared latency histogram holds no sample of any size, and a kept run counts only its own units", "[stats]") {
  detail::latency_histogram h;
  for (std::uint64_t v : {std::uint64_t(0), std::uint64_t(5), std::uint64_t(1500), std::uint64_t(1) << 40}) h.add(v);
  CHECK(h.read().samples == 4);
  h.clear();  // bounded by the samples' buckets: the 0 and the 2^40 ones must go too
  for (const auto& c : h.count) CHECK(c.load() == 0);
  CHECK(h.read().samples == 0);
  CHECK(h.read().max_ns == 0);
  h.add(7);
  CHECK(h.read().samples == 1);
  CHECK(h.read().p50_ns == 7);
  h.clear();
  h.add(std::uint64_t(1) << 30);  // alone: min and max in one high bucket
  CHECK(h.read().p99_ns == std::uint64_t(1) << 30);
  h.clear();
  h.clear();  // empty: nothing to do
  for (const auto& c : h.count) CHECK(c.load() == 0);
  CHECK(h.read().samples == 0);

  const std::size_t n = 40;
  auto in = make_items(n, 8);
  std::vector<std::vector<int>> out;
  graph g(map<inc>(), {.latency_every = 1});
  for (int run = 0; run < 3; ++run) {  // the second and third reuse the first's state
    auto f = g.run(in, out);
    f.get();
    CHECK(f.stats().latency.samples == n);
  }
}

TEST_CASE("map chunks are counted once per piece the unit was split into", "[stats][tsan]") {
  // Units of 64 ints; a per-chunk leaf told to split them down to one element.
  const std::size_t units = 20;
  auto in = make_items(units, 64);
  std::vector<std::vector<int>> out;
  chunk_calls = 0;
  scheduler& s = default_scheduler();  // under ThreadSanitizer: steal (TBB is not instrumented)
  graph g(map<count_chunks>({}, {.grain = 0, .inline_below = 1, .min_task = 1}), {.scheduler = &s});
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  CHECK(st.stages[0].chunks == chunk_calls.load());
  CHECK(st.stages[0].chunks >= units);  // at least one piece per unit
  CHECK(st.stages[1].chunks == 0);      // the sink
  REQUIRE(out.size() == units);
  CHECK(out[3][10] == in[3][10] + 1);
}

TEST_CASE("a map sizes its tasks from its leaf's cost: cheap units run inline and costly ones still split", "[stats][tsan]") {
  scheduler& s = default_scheduler();
  const std::size_t units = 20;
  SECTION("cheap: 2048 increments a unit, tasks of 16 allowed: far fewer pieces once the cost is measured") {
    // The pieces one unmeasured unit is cut into (the scheduler's loop partitioner decides how many).
    auto one = make_items(1, 2048);
    std::vector<std::vector<int>> out1;
    graph g1(map<inc>({}, {.min_task = 16}), {.scheduler = &s});
    auto f1 = g1.run(one, out1);
    f1.get();
    const std::uint64_t first = f1.stats().stages[0].chunks;
    REQUIRE(first >= 2);
    // A new map (nothing measured) on 20 units: after the first, a unit takes
    // about 1 µs (0.5 ns an element: inline), or about 6 pieces at 60 ns an
    // element (ThreadSanitizer); unmeasured, each would be cut like the first.
    auto in = make_items(units, 2048);
    std::vector<std::vector<int>> out;
    graph g(map<inc>({}, {.min_task = 16}), {.scheduler = &s});
    auto f = g.run(in, out);
    f.get();
    // A third: under ThreadSanitizer the measured cost, and so the pieces a
    // unit, vary by twice between runs (about 27 a unit against 129).
    CHECK(f.stats().stages[0].chunks < first * units / 3);
    REQUIRE(out.size() == units);
    CHECK(out[7][2000] == in[7][2000] + 1);
  }
  SECTION("costly: 300 µs an element, one element a task allowed, split however much was measured") {
    auto in = make_items(5, 8);
    std::vector<std::vector<int>> out;
    graph g(map<slow_inc>({}, {.min_task = 1}), {.scheduler = &s});
    auto f = g.run(in, out);
    f.get();
    CHECK(f.stats().stages[0].chunks >= 2 * 5);
    REQUIRE(out.size() == 5);
    CHECK(out[4][7] == in[4][7] + 1);
  }
}

TEST_CASE("stage counters sum what leaves add while the stage runs", "[stats][tsan]") {
  const std::size_t n = 200;
  auto in = make_items(n, 1);  // the leaf is called once per element
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), farm(map<counting_inc>(), 2)));
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  CHECK(st.stages[0].counters.empty());
  REQUIRE(st.stages[1].counters.size() == 2);
  CHECK(st.stages[1].counters[0].first == "seen");  // sorted by name
  CHECK(st.stages[1].counters[0].second == double(n));
  CHECK(st.stages[1].counters[1].first == "twice");
  CHECK(st.stages[1].counters[1].second == double(2 * n));
  add_stage_counter("outside", 1);  // not in a stage: ignored
  CHECK(f.stats().stages[1].counters.size() == 2);
}

TEST_CASE("stats can be polled while the run goes on", "[stats][tsan]") {
  const std::size_t n = 400;
  auto in = make_items(n, 4);
  std::vector<std::vector<int>> out;
  scheduler& s = default_scheduler();  // under ThreadSanitizer: steal (TBB is not instrumented)
  graph g(pipeline(map<inc>(), map<slow_inc>(), map<twice>()), {.scheduler = &s, .capacity = 4, .scheduler_stats = true});
  auto f = g.run(in, out);
  std::uint64_t last = 0, polls = 0;
  bool monotonic = true;
  while (!f.ready()) {
    run_stats st = f.stats();
    monotonic &= st.units_out >= last;
    last = st.units_out;
    CHECK(st.stages.size() == 4);
    ++polls;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  f.get();
  run_stats st = f.stats();
  CHECK(monotonic);
  CHECK(polls > 0);
  CHECK(st.done);
  CHECK(st.units_out == n);
  // The scheduler's counters over the run: it ran the stages' tasks.
  CHECK(st.scheduler.tasks_run > 0);
  CHECK(st.scheduler.workers.size() == s.stats().workers.size());
  const run_stats again = f.stats();  // final: waits are no longer growing
  CHECK(again.stages[2].wait_in_ns == st.stages[2].wait_in_ns);
}

TEST_CASE("current_run_id names each run inside its stages and is 0 outside", "[runtime][tsan]") {
  CHECK(current_run_id() == 0);
  std::mutex m;
  std::set<std::uint64_t> seen[2];
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  struct record_id {
    std::mutex* m;
    std::set<std::uint64_t>* ids;
    void operator()(chunk, in<int>, out<int>) const {
      std::lock_guard<std::mutex> lk(*m);
      ids->insert(current_run_id());
    }
  };
  for (int r = 0; r < 2; ++r) {
    graph g(farm(map(record_id{&m, &seen[r]}), 2), {.scheduler = s.get()});
    auto items = make_items(50, 4);
    std::vector<std::vector<int>> out;
    g.run(items, out).get();
  }
  REQUIRE(seen[0].size() == 1);  // every stage of a run sees the same id
  REQUIRE(seen[1].size() == 1);
  CHECK(*seen[0].begin() != 0);
  CHECK(*seen[1].begin() != 0);
  CHECK(*seen[0].begin() != *seen[1].begin());
}

TEST_CASE("a graph's next run reuses the last run's units cleared: counts and buffers start afresh",
          "[stats][runtime][tsan]") {
  const auto before = buffer_pool::global().stats().bytes_in_use;
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.scheduler = s.get(), .capacity = 8});
  auto items = make_items(400, 64);
  std::size_t alive_max_many = 0;
  {  // many units alive at once: the sink is slow
    std::size_t n = 0;
    auto f = g.run(from(items), for_each([&](const work_unit&) {
                     ++n;
                     std::this_thread::sleep_for(std::chrono::microseconds(20));
                   }));
    f.get();
    CHECK(n == items.size());
    alive_max_many = f.stats().units_alive_max;
  }
  CHECK(alive_max_many > 4);
  {  // a failed run leaves units in its queues
    auto f = g.run(from(items), for_each([](const work_unit& u) {
                     if (u.seq() == 50) throw std::runtime_error("sink fails");
                   }));
    CHECK_THROWS(f.get());
  }
  CHECK(buffer_pool::global().stats().bytes_in_use == before);  // its units were cleared
  std::vector<std::vector<int>> one(1, std::vector<int>(64, 5)), out;
  auto f = g.run(from(one), into(out));
  f.get();
  const auto st = f.stats();
  CHECK(st.units_alive_max <= 3);  // this run's units, not the earlier runs'
  CHECK(st.units_alive == 0);
  CHECK(st.units_in == 1);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == std::vector<int>(64, 12));
}
