// A graph's finished runs kept for its next runs (run_state::park): every
// run's results and counts as a fresh run's, for trees and dags, after
// failed, cancelled and stopped runs, with sources that switch between
// tasks and threads, and with runs at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <stdexcept>
#include <thread>

#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

/// Units of `len` ints each, unit k holding k, k + 1, ...; as a task or on a thread.
source counting(int n, std::size_t len, source_mode mode = source_mode::task) {
  return generate(
      [n, len](unit_builder& b) {
        if (b.seq() >= std::uint64_t(n)) return false;
        b.set_shape(shape::d1(len));
        auto v = b.add<int>();
        for (std::size_t j = 0; j < len; ++j) v[j] = int(b.seq() + j);
        return true;
      },
      mode);
}

/// Stage k of the stats of a run; the same for a fresh run of the same graph.
struct stage_counts {
  std::size_t capacity;
  std::uint64_t units;
  bool operator==(const stage_counts&) const = default;
};

/// Units k of `out` whose element j is not want(k); `out` must hold n units.
template <class F>
std::size_t wrong(const std::vector<std::vector<int>>& out, int n, std::size_t j, F want) {
  REQUIRE(out.size() == std::size_t(n));
  std::size_t bad = 0;
  for (int k = 0; k < n; ++k)
    if (out[std::size_t(k)][j] != want(k)) ++bad;
  return bad;
}

/// The units of its key (x % 4) seen so far, this one included.
struct count_by_key {
  std::map<int, int>* seen;
  void operator()(int x, int* y) const { *y = ++(*seen)[x % 4]; }
};

}  // namespace

TEST_CASE("a graph's next runs reuse its finished runs: results, order and counts as fresh runs'", "[runtime][tsan]") {
  for (const char* p : policies) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 2, .pin = false});
    const graph_options o{.scheduler = s.get(), .latency_every = 1};
    graph g(pipeline(map<inc>(), farm(map<twice>(), 3), map<inc>()), o);
    std::size_t reused = 0;
    const int sizes[] = {300, 1, 57, 0, 300, 200, 1, 300, 90, 300};
    for (int n : sizes) {
      INFO("run of " << n);
      std::vector<std::vector<int>> out;
      run_stats st;
      {
        auto f = g.run(counting(n, 8), into(out));
        f.get();
        st = f.stats();
      }
      REQUIRE(out.size() == std::size_t(n));
      std::size_t bad = 0;
      for (int k = 0; k < n; ++k)
        for (std::size_t j = 0; j < 8; ++j)
          if (out[std::size_t(k)][j] != 2 * (k + int(j) + 1) + 1) ++bad;
      CHECK(bad == 0);  // and in order: the farm is ordered
      CHECK(st.units_in == std::uint64_t(n));
      CHECK(st.units_out == std::uint64_t(n));
      CHECK(st.units_alive == 0);
      CHECK(st.latency.samples == std::uint64_t(n));
      CHECK(st.sources.at(0).units == std::uint64_t(n));
      for (const stage_stats& x : st.stages) {
        CHECK(x.units == std::uint64_t(n));
        CHECK(x.high_water <= x.capacity);
      }
      if (st.reused) ++reused;
    }
    // The caller usually ends a run itself and parks it before its next
    // run; a worker that dropped it later leaves that one run fresh.
    CHECK(reused >= 1);
  }
}

TEST_CASE("a kept run's queues start at their built capacity, not the one small units grew them to",
          "[runtime][tsan]") {
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  auto tree = [] { return pipeline(map<inc>(), farm(map<twice>(), 2)); };
  auto counts = [](const run_stats& st) {
    std::vector<stage_counts> c;
    for (const auto& x : st.stages) c.push_back({x.capacity, x.units});
    return c;
  };
  auto big = [&](graph& g) {  // units of 1 MiB: no channel grows
    std::vector<std::vector<int>> out;
    auto f = g.run(counting(6, 1 << 18), into(out));
    f.get();
    REQUIRE(out.size() == 6);
    CHECK(out[5][7] == 2 * (5 + 7 + 1));
    return f.stats();
  };
  graph fresh(tree(), {.scheduler = s.get()});
  const run_stats want = big(fresh);
  graph g(tree(), {.scheduler = s.get()});
  std::size_t grown = 0, reused = 0;
  for (int round = 0; round < 6; ++round) {
    run_stats small;
    {
      std::vector<std::vector<int>> out;
      auto f = g.run(counting(200, 4), into(out));
      f.get();
      CHECK(out.size() == 200);
      small = f.stats();
    }
    if (small.stages.at(1).capacity > want.stages.at(1).capacity) ++grown;
    const run_stats st = big(g);
    if (st.reused) ++reused;
    CHECK(counts(st) == counts(want));
  }
  CHECK(grown == 6);  // small units did grow the queues
  CHECK(reused >= 1);
}

TEST_CASE("a run that failed or was cancelled is not kept, and the graph's next runs are right", "[runtime][tsan]") {
  auto s = make_scheduler("tbb", {.threads = 2, .pin = false});
  for (int how = 0; how < 2; ++how) {
    INFO((how == 0 ? "failed" : "cancelled"));
    graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.scheduler = s.get(), .capacity = 4});
    {
      std::atomic<int> seen{0};
      auto f = g.run(counting(400, 16), for_each([&](const work_unit&) {
                       if (++seen == 50 && how == 0) throw std::runtime_error("sink fails");
                       std::this_thread::sleep_for(std::chrono::microseconds(10));
                     }));
      if (how == 1) {
        while (seen.load() < 50) std::this_thread::yield();
        f.cancel();
      }
      CHECK_THROWS(f.get());
    }
    // The only run so far was not kept: this one is built afresh.
    std::vector<std::vector<int>> out;
    auto f = g.run(counting(100, 16), into(out));
    f.get();
    CHECK_FALSE(f.stats().reused);
    REQUIRE(out.size() == 100);
    CHECK(out[99][0] == 2 * 100);
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("a stopped run's graph runs again: every unit of the next run once", "[runtime][tsan]") {
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.scheduler = s.get(), .capacity = 4});
  for (int round = 0; round < 4; ++round) {
    {
      std::atomic<int> seen{0};
      auto f = g.run(generate([](unit_builder& b) {
                       b.set_shape(shape::d1(4));
                       auto v = b.add<int>();  // pool memory: every element written
                       for (std::size_t j = 0; j < 4; ++j) v[j] = int(b.seq() % 1000);
                       return true;  // endless: stop() ends it
                     }),
                     for_each([&](const work_unit&) { ++seen; }));
      while (seen.load() < 20) std::this_thread::yield();
      f.stop();
      f.get();
      CHECK(f.stats().units_out == f.stats().units_in);  // stop drains what was accepted
    }
    std::vector<std::vector<int>> out;
    auto f = g.run(counting(120, 4), into(out));
    f.get();
    CHECK(wrong(out, 120, 3, [](int k) { return 2 * (k + 4); }) == 0);
    CHECK(f.stats().units_in == 120);
  }
}

TEST_CASE("a kept run serves sources that run on threads after sources that run as tasks, and back",
          "[runtime][tsan]") {
  auto s = make_scheduler("tbb", {.threads = 2, .pin = false});
  graph g(pipeline(map<inc>(), map<twice>()), {.scheduler = s.get()});
  const source_mode modes[] = {source_mode::task, source_mode::task, source_mode::thread, source_mode::thread,
                               source_mode::task, source_mode::thread, source_mode::task};
  for (source_mode m : modes) {
    INFO((m == source_mode::task ? "task" : "thread"));
    std::vector<std::vector<int>> out;
    auto f = g.run(counting(150, 4, m), into(out));
    f.get();
    CHECK(wrong(out, 150, 0, [](int k) { return 2 * (k + 1); }) == 0);
    const auto st = f.stats();
    CHECK(st.units_in == 150);
    for (const auto& x : st.stages) CHECK(x.units == 150);
  }
}

TEST_CASE("runs of one graph at once each get a run of their own, kept or new", "[runtime][tsan]") {
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.scheduler = s.get()});
  for (int round = 0; round < 5; ++round) {
    constexpr int at_once = 6;
    std::vector<std::vector<std::vector<int>>> outs(at_once);
    std::vector<run_future> fs;
    for (int r = 0; r < at_once; ++r) fs.push_back(g.run(counting(100 + r, 4), into(outs[std::size_t(r)])));
    for (auto& f : fs) f.get();
    for (int r = 0; r < at_once; ++r) {
      INFO("round " << round << ", run " << r);
      REQUIRE(outs[std::size_t(r)].size() == std::size_t(100 + r));
      CHECK(outs[std::size_t(r)].back()[0] == 2 * (100 + r));
      const auto st = fs[std::size_t(r)].stats();
      CHECK(st.units_in == std::uint64_t(100 + r));
      for (const auto& x : st.stages) CHECK(x.units == std::uint64_t(100 + r));
    }
  }
}

TEST_CASE("dags run again and again on kept runs: broadcast and zip, split by key and merge, join, keyed farm",
          "[dag][runtime][tsan]") {
  auto s = make_scheduler("tbb", {.threads = 2, .pin = false});
  SECTION("diamond") {
    dag d;
    auto in = d.source("in");
    auto both = d.zip("both", {d.add("inc", farm(map<inc>(), 2), in), d.add("twice", map<twice>(), in)});
    d.sink("out", both);
    graph g(d, {.scheduler = s.get()});
    for (int n : {200, 3, 150, 200, 1, 90}) {
      std::map<std::uint64_t, std::pair<int, int>> got;
      auto f = g.run({{"in", counting(n, 4)}}, {{"out", for_each([&](const work_unit& u) {
                                                 got[u.seq()] = {u.input<int>(0)[0], u.input<int>(1)[0]};
                                               })}});
      f.get();
      REQUIRE(got.size() == std::size_t(n));
      std::size_t bad = 0;
      for (int k = 0; k < n; ++k)
        if (got[std::uint64_t(k)] != std::pair<int, int>{k + 1, 2 * k}) ++bad;
      CHECK(bad == 0);
      CHECK(f.stats().units_alive == 0);
    }
  }
  SECTION("split by key and merge") {
    dag d;
    auto parts = d.split_by_key("split", d.source("in"), 3,
                                [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[0] % 5); });
    std::vector<dag::port> done;
    for (int k = 0; k < 3; ++k) done.push_back(d.add("inc" + std::to_string(k), map<inc>(), parts[std::size_t(k)]));
    d.sink("out", d.merge("all", done));
    graph g(d, {.scheduler = s.get()});
    for (int n : {300, 7, 300, 120}) {
      std::map<int, std::vector<std::uint64_t>> by_key;
      std::size_t count = 0, bad = 0;
      auto f = g.run({{"in", counting(n, 2)}}, {{"out", for_each([&](const work_unit& u) {
                                                 const int v = u.input<int>(0)[0];
                                                 if (v != int(u.seq()) + 1) ++bad;
                                                 by_key[(v - 1) % 5].push_back(u.seq());
                                                 ++count;
                                               })}});
      f.get();
      CHECK(count == std::size_t(n));
      CHECK(bad == 0);
      for (auto& [key, seqs] : by_key) CHECK(std::is_sorted(seqs.begin(), seqs.end()));
    }
  }
  SECTION("join") {
    dag d;
    auto key = [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[0] % 7); };
    d.sink("out", d.join("pairs", {d.source("left"), d.source("right")}, {key, key}));
    graph g(d, {.scheduler = s.get()});
    for (int n : {140, 14, 140}) {
      std::size_t count = 0, bad = 0;
      auto f = g.run({{"left", counting(n, 1)}, {"right", counting(n, 1)}},
                     {{"out", for_each([&](const work_unit& u) {
                        // FIFO per key: the k-th unit of a key on each side meet.
                        if (u.input<int>(0)[0] != u.input<int>(1)[0]) ++bad;
                        ++count;
                      })}});
      f.get();
      CHECK(count == std::size_t(n));
      CHECK(bad == 0);
    }
  }
  SECTION("keyed farm") {
    std::vector<std::map<int, int>> state(3);
    dag d;
    d.sink("out", d.keyed_farm(
                      "count", d.source("in"), 3, [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[0] % 4); },
                      [&](unsigned r) { return map(count_by_key{&state[r]}); }));
    graph g(d, {.scheduler = s.get()});
    for (int n : {400, 9, 400}) {
      for (auto& m : state) m.clear();
      std::vector<std::vector<int>> out;
      g.run({{"in", counting(n, 1)}}, {{"out", into(out)}}).get();
      // In order, each key counted in one replica.
      CHECK(wrong(out, n, 0, [](int k) { return k / 4 + 1; }) == 0);
    }
  }
}
