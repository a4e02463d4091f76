// Dags: broadcast, split, merge, zip, several sources and sinks, alone and
// combined, on every policy, against sequential results; back pressure,
// end of stream, errors, cancellation and stop through every branch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sinew/engine/trace.hpp>
#include <sinew/io.hpp>
#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

std::unique_ptr<scheduler> two_workers(const char* policy) {
  return make_scheduler(policy, {.threads = 2, .pin = false});
}

// What a sink saw: per unit (origin, seq) its buffers of layer 0.
struct seen {
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::vector<int>>> units;
  std::size_t count = 0, ends = 0;
  /// `delay`: how long the sink takes a unit.
  sink make(std::chrono::microseconds delay = {}) {
    return for_each(
        [this, delay](const work_unit& u) {
          if (delay.count()) std::this_thread::sleep_for(delay);
          std::vector<std::vector<int>> bufs;
          for (unsigned b = 0; b < u.in().size(); ++b) {
            auto v = u.input<int>(b);
            bufs.emplace_back(v.data(), v.data() + v.size());
          }
          units[{u.origin(), u.seq()}] = std::move(bufs);
          ++count;
        },
        [this] { ++ends; });
  }
};

std::vector<int> apply(std::vector<int> v, int (*f)(int)) {
  for (int& x : v) x = f(x);
  return v;
}
int plus1(int x) { return x + 1; }
int times2(int x) { return 2 * x; }

/// Source "in" broadcast to trees `a` and `b`, zipped ("pair") into sink "out".
dag zip_of(node a, node b) {
  dag d;
  auto in = d.source("in");
  auto pa = d.add("a", std::move(a), in);
  auto pb = d.add("b", std::move(b), in);
  d.sink("out", d.zip("pair", {pa, pb}));
  return d;
}

/// Units of `out` (origin 0, seq k) that are not the pair {a(items[k]), b(items[k])}.
template <class A, class B>
std::size_t wrong_pairs(const seen& out, const std::vector<std::vector<int>>& items, const A& a, const B& b) {
  std::size_t bad = 0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const auto& got = out.units.at({0, k});
    if (got.size() != 2 || got[0] != a(items[k]) || got[1] != b(items[k])) ++bad;
  }
  return bad;
}

/// Runs a zip_of graph on `items` into `out` (the sink taking `delay` a
/// unit); a hang past 60 s fails as `what`.
run_future run_zip(graph& g, std::vector<std::vector<int>>& items, seen& out, const char* what,
                   std::chrono::microseconds delay = {}) {
  run_future f;
  within(std::chrono::seconds(60), what, [&] {
    f = g.run({{"in", from(items)}}, {{"out", out.make(delay)}});
    f.get();
  });
  return f;
}
/// Units of `out` that are not the pair {items[k] + 1, 2 items[k]}.
std::size_t wrong_inc_twice(const seen& out, const std::vector<std::vector<int>>& items) {
  return wrong_pairs(out, items, [](const auto& v) { return apply(v, plus1); },
                     [](const auto& v) { return apply(v, times2); });
}

struct slow_inc {
  void operator()(int x, int* y) const {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    *y = x + 1;
  }
};

struct throw_on_5 {
  void operator()(int x, int* y) const {
    if (x == 5 * 16) throw std::runtime_error("five");
    *y = x;
  }
};

}  // namespace

TEST_CASE("dag diamond: a broadcast into two trees and a zip on every policy", "[dag][tsan]") {
  const std::size_t n = 300, len = 16;
  auto items = make_items(n, len);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    auto in = d.source("in");
    auto a = d.add("inc", farm(map<inc>(), 3), in);
    auto b = d.add("twice", map<twice>(), in);
    auto both = d.zip("both", {a, b});
    d.sink("out", d.add("sum", map<add_pair>(), both));
    graph g(d, {.scheduler = s.get()});
    seen out;
    auto f = g.run({{"in", from(items)}}, {{"out", out.make()}});
    f.get();
    REQUIRE(out.count == n);
    CHECK(out.ends == 1);
    std::size_t bad = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const auto& got = out.units.at({0, k});
      std::vector<int> sum(len), diff(len);
      for (std::size_t j = 0; j < len; ++j) {
        sum[j] = (items[k][j] + 1) + 2 * items[k][j];
        diff[j] = (items[k][j] + 1) - 2 * items[k][j];
      }
      if (got.size() != 2 || got[0] != sum || got[1] != diff) ++bad;
    }
    CHECK(bad == 0);
    auto st = f.stats();
    CHECK(st.units_in == n);
    CHECK(st.units_out == n);
    CHECK(st.units_alive == 0);
    REQUIRE(st.sources.size() == 1);
    CHECK(st.sources[0].name == "in");
    REQUIRE(st.sinks.size() == 1);
    CHECK(st.sinks[0].units == n);
  }
}

TEST_CASE("dag broadcast to two sinks shares buffers and an in-place tree copies them", "[dag][tsan]") {
  const std::size_t n = 200, len = 8;
  auto items = make_items(n, len);
  const auto original = items;
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    auto in = d.source("in");
    d.sink("squared", d.add("square", map<square_in_place>(), in));
    d.sink("plain", in);
    d.sink("plus", d.add("inc", map<inc>(), in));
    graph g(d, {.scheduler = s.get()});
    seen sq, plain, plus;
    auto f = g.run({{"in", from(items)}}, {{"squared", sq.make()}, {"plain", plain.make()}, {"plus", plus.make()}});
    f.get();
    CHECK(items == original);  // the in-place tree wrote its own copy
    REQUIRE(sq.count == n);
    REQUIRE(plain.count == n);
    REQUIRE(plus.count == n);
    std::size_t bad = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (sq.units.at({0, k})[0] != apply(original[k], sq_mod)) ++bad;
      if (plain.units.at({0, k})[0] != original[k]) ++bad;
      if (plus.units.at({0, k})[0] != apply(original[k], plus1)) ++bad;
    }
    CHECK(bad == 0);
    auto st = f.stats();
    CHECK(st.units_out == 3 * n);
    CHECK(st.units_alive == 0);
  }
}

TEST_CASE("dag merge of two sources keeps each unit's origin and sequence number", "[dag][tsan]") {
  auto left = make_items(150, 4), right = make_items(90, 4);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    auto all = d.merge("all", {d.source("left"), d.source("right")});
    d.sink("out", d.add("twice", farm(map<twice>(), 2), all));
    graph g(d, {.scheduler = s.get()});
    seen out;
    auto f = g.run({{"right", from(right)}, {"left", from(left)}}, {{"out", out.make()}});
    f.get();
    REQUIRE(out.count == left.size() + right.size());
    CHECK(out.ends == 1);
    std::size_t bad = 0;
    for (std::size_t k = 0; k < left.size(); ++k)
      if (out.units.at({0, k})[0] != apply(left[k], times2)) ++bad;
    for (std::size_t k = 0; k < right.size(); ++k)
      if (out.units.at({1, k})[0] != apply(right[k], times2)) ++bad;
    CHECK(bad == 0);
    auto st = f.stats();
    REQUIRE(st.sources.size() == 2);
    CHECK(st.sources[0].name == "left");
    CHECK(st.sources[0].units == left.size());
    CHECK(st.sources[1].units == right.size());
    CHECK(st.units_alive == 0);
  }
}

TEST_CASE("dag splits deliver every unit once and a split by key keeps each key's order", "[dag][tsan]") {
  const std::size_t n = 400;
  auto items = make_items(n, 4);
  for (const char* p : policies)
    for (int how = 0; how < 3; ++how) {
      INFO(p << " split " << how);
      auto s = two_workers(p);
      dag d;
      auto in = d.source("in");
      std::vector<dag::port> parts =
          how == 2 ? d.split_by_key("split", in, 3, [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[0] / 4 % 5); })
                   : d.split("split", in, 3, how == 0 ? split_policy::round_robin : split_policy::least_loaded);
      std::vector<dag::port> done;
      for (int k = 0; k < 3; ++k) done.push_back(d.add("inc" + std::to_string(k), map<inc>(), parts[std::size_t(k)]));
      d.sink("out", d.merge("all", done));
      graph g(d, {.scheduler = s.get()});
      std::map<int, std::vector<std::uint64_t>> by_key;
      std::size_t count = 0, bad = 0;
      auto f = g.run({{"in", from(items)}}, {{"out", for_each([&](const work_unit& u) {
                                                  auto v = u.input<int>(0);
                                                  if (v[0] != items[u.seq()][0] + 1) ++bad;
                                                  by_key[(v[0] - 1) / 4 % 5].push_back(u.seq());
                                                  ++count;
                                                })}});
      f.get();
      CHECK(count == n);
      CHECK(bad == 0);
      if (how == 2)
        for (auto& [key, seqs] : by_key) CHECK(std::is_sorted(seqs.begin(), seqs.end()));
      auto st = f.stats();
      // Every branch got units (the split reaches all its outputs).
      for (int k = 0; k < 3; ++k) CHECK(st.stages[std::size_t(k)].units > 0);
      CHECK(st.units_alive == 0);
    }
}

TEST_CASE("dag zip of a capacity-1 slow branch and a wide fast one does not deadlock", "[dag][tsan]") {
  const std::size_t n = 300;
  auto items = make_items(n, 4);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    graph g(zip_of(pipeline(map<slow_inc>(), map<inc>()).capacity(1), farm(map<twice>(), 4)),
            {.scheduler = s.get(), .capacity = 0});
    seen out;
    run_zip(g, items, out, "zip of uneven branches");
    REQUIRE(out.count == n);
    CHECK(wrong_pairs(out, items, [](const auto& v) { return apply(apply(v, plus1), plus1); },
                      [](const auto& v) { return apply(v, times2); }) == 0);
  }
}

TEST_CASE("dag zip before a slow sink holds the unit it completes: each unit once, units alive bounded", "[dag][tsan]") {
  // The sink's queue (capacity 1) is full most of the time: the zip takes
  // parts without room and holds each unit they complete until there is.
  const std::size_t n = 200;
  auto items = make_items(n, 4);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    graph g(zip_of(map<inc>(), farm(map<twice>(), 3)), {.scheduler = s.get(), .capacity = 1});
    seen out;
    const run_future f = run_zip(g, items, out, "zip before a slow sink", std::chrono::microseconds(20));
    REQUIRE(out.count == n);
    CHECK(out.ends == 1);
    CHECK(wrong_inc_twice(out, items) == 0);
    const auto st = f.stats();
    // Capacities, a unit made or consumed per source and sink, the two
    // broadcast outputs and the zip's held unit, and the parts waiting for
    // their match (one branch ahead by at most what the other's queues hold).
    CHECK(st.units_alive_max <= 2 * st.capacity_total + 2 * 2 + 2 + 1);
    CHECK(st.units_alive == 0);
  }
}

TEST_CASE("dag zip of cheap farms before a slow sink delivers every unit at every queue capacity under every policy",
          "[dag][tsan]") {
  // From capacity 8 the zip sets the farms' pace: a push into a farm whose
  // output is more than half full leaves it to the zip's pop at half empty,
  // and the farm runs as many replicas as keep up with the zip. A lost
  // wake-up would hang here.
  const std::size_t n = 400;
  auto items = make_items(n, 2);
  for (const char* p : policies)
    for (std::size_t cap : {1, 2, 3, 8, 9, 16}) {
      INFO(p << ", capacity " << cap);
      auto s = make_scheduler(p, {.threads = 3, .pin = false});
      graph g(zip_of(farm(map<inc>(), 3, farm_order::unordered), farm(map<twice>(), 3, farm_order::unordered)),
              {.scheduler = s.get(), .capacity = cap});
      seen out;
      const run_future f = run_zip(g, items, out, "zip of cheap farms before a slow sink", std::chrono::microseconds(5));
      REQUIRE(out.count == n);
      CHECK(wrong_inc_twice(out, items) == 0);
      // The zip counts the parts it took; it reads no buffer, so no bytes.
      const auto st = f.stats();
      const auto zip = std::find_if(st.stages.begin(), st.stages.end(), [](const auto& x) { return x.path == "pair"; });
      REQUIRE(zip != st.stages.end());
      CHECK(zip->units == 2 * n);
      CHECK(zip->bytes == 0);
    }
}

TEST_CASE("dag zip of sources of different lengths fails naming the branches", "[dag][tsan]") {
  auto a = make_items(10, 2), b = make_items(12, 2);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    d.sink("out", d.zip("pair", {d.source("short"), d.source("long")}));
    graph g(d, {.scheduler = s.get()});
    auto f = g.run({{"short", from(a)}, {"long", from(b)}}, {{"out", discard()}});
    try {
      f.get();
      FAIL("no error");
    } catch (const node_error& e) {
      CHECK(e.path() == "pair");
      std::string w = e.what();
      CHECK(w.find("'long'") != std::string::npos);
      CHECK(w.find("'short'") != std::string::npos);
    }
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("dag a throwing leaf in one branch fails the run with its path and releases every unit", "[dag][tsan]") {
  auto items = make_items(200, 16);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    auto in = d.source("in");
    auto bad = d.add("bad", farm(map<throw_on_5>(), 2), in);
    d.sink("a", d.zip("pair", {bad, d.add("ok", map<inc>(), in)}));
    d.sink("b", in);
    graph g(d, {.scheduler = s.get()});
    auto f = g.run({{"in", from(items)}}, {{"a", discard()}, {"b", discard()}});
    try {
      f.get();
      FAIL("no error");
    } catch (const node_error& e) {
      CHECK(e.path().rfind("bad", 0) == 0);
      CHECK(std::string(e.what()).find("five") != std::string::npos);
    }
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("dag stop delivers every accepted unit to every sink and cancel releases every unit", "[dag][tsan]") {
  for (const char* p : policies)
    for (bool cancel : {false, true}) {
      INFO(p << (cancel ? " cancel" : " stop"));
      auto s = two_workers(p);
      dag d;
      auto in = d.source("in");
      auto parts = d.split("spread", in, 2);
      d.sink("one", d.add("slow", map<slow_inc>(), parts[0]));
      d.sink("two", d.merge("both", {parts[1], d.add("inc", map<inc>(), in)}));
      graph g(d, {.scheduler = s.get()});
      auto src = generate([](unit_builder& b) {
        b.set_shape(shape::d1(4));
        auto v = b.add<int>();
        for (int j = 0; j < 4; ++j) v[std::size_t(j)] = int(b.seq());
        return !b.stop_requested();
      });
      auto f = g.run({{"in", src}}, {{"one", discard()}, {"two", discard()}});
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (cancel) {
        f.cancel();
        CHECK_THROWS_AS(f.get(), cancelled);
      } else {
        f.stop();
        f.get();
        auto st = f.stats();
        // Each unit reaches one of the split's sinks and the merge's.
        CHECK(st.units_out == 2 * st.units_in);
        CHECK(st.sinks[0].units + st.sinks[1].units == 2 * st.units_in);
      }
      CHECK(f.stats().units_alive == 0);
    }
}

TEST_CASE("dag back pressure bounds the units alive through a broadcast to a slow branch", "[dag][tsan]") {
  auto items = make_items(400, 4);
  auto s = two_workers("steal");
  dag d;
  auto in = d.source("in");
  d.sink("slowed", d.add("slow", map<slow_inc>(), in));
  d.sink("fast", in);
  graph g(d, {.scheduler = s.get(), .capacity = 2});
  auto f = g.run({{"in", from(items)}}, {{"slowed", discard()}, {"fast", discard()}});
  f.get();
  auto st = f.stats();
  CHECK(st.units_out == 800);
  // Channels' capacities, plus one unit per source and sink being made or
  // consumed, plus one per broadcast output held.
  CHECK(st.units_alive_max <= st.capacity_total + 2 * 3 + 2);
}

TEST_CASE("dag build errors name the vertex", "[dag][tsan]") {
  {
    dag d;
    auto in = d.source("in");
    d.add("a", map<inc>(), in);
    CHECK_THROWS_WITH(graph(d), Catch::Contains("a: its output is not connected"));
  }
  {
    dag d;
    d.source("in");
    CHECK_THROWS_WITH(d.source("in"), Catch::Contains("two vertices"));
  }
  {
    dag d;
    auto in = d.source("in");
    auto both = d.zip("both", {d.add("a", map<inc>(), in), d.add("b", map<inc>(), in)});
    d.sink("out", d.add("one", map<inc>(), both));  // reads one int, gets two
    CHECK_THROWS_WITH(graph(d), Catch::Contains("one: reads"));
  }
  {
    dag d;
    auto in = d.source("in");
    d.sink("out", in);
    graph g(d);
    auto items = make_items(2, 2);
    CHECK_THROWS_WITH(g.run({{"in", from(items)}}, {{"other", discard()}}), Catch::Contains("no sink of that name"));
    CHECK_THROWS_WITH(g.run({{"in", from(items)}}, {}), Catch::Contains("out: sink not given"));
  }
}

namespace {
struct running_count {
  std::map<int, int>* seen;
  void operator()(int sensor, int* count) const { *count = ++(*seen)[sensor]; }
};
}  // namespace

TEST_CASE("dag keyed farm keeps each key's state in one replica and its order", "[dag][tsan]") {
  const std::size_t n = 3000;
  std::vector<std::vector<int>> items(n, std::vector<int>(1));
  for (std::size_t k = 0; k < n; ++k) items[k][0] = int((k * 7919) % 13);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    std::vector<std::map<int, int>> state(4);
    dag d;
    auto in = d.source("in");
    auto counts = d.keyed_farm(
        "count", in, 4, [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[0]); },
        [&](unsigned r) { return map(running_count{&state[r]}); });
    d.sink("out", counts);
    graph g(d, {.scheduler = s.get()});
    std::vector<std::vector<int>> out;
    g.run({{"in", from(items)}}, {{"out", into(out)}}).get();
    REQUIRE(out.size() == n);
    std::map<int, int> seen;
    std::size_t bad = 0;
    for (std::size_t k = 0; k < n; ++k)
      if (out[k][0] != ++seen[items[k][0]]) ++bad;
    CHECK(bad == 0);
    for (unsigned r = 0; r < 4; ++r)
      for (auto& [key, c] : state[r]) {
        CHECK(unsigned(key) % 4 == r);
        CHECK(c == seen[key]);
      }
  }
  dag d;
  auto in = d.source("in");
  d.sink("out", d.keyed_farm("count", in, 2, [](const work_unit&) { return std::uint64_t(0); },
                             [](unsigned) { return farm(map<inc>(), 2); }));
  CHECK_THROWS_WITH(graph(d), Catch::Contains("no farm inside"));
}

TEST_CASE("dag traces one junction event per unit a junction takes", "[dag][trace]") {
  auto items = make_items(50, 4);
  auto s = two_workers("steal");
  dag d;
  auto in = d.source("in");
  d.sink("out", d.zip("pair", {d.add("a", map<inc>(), in), d.add("b", map<twice>(), in)}));
  trace rec;
  graph g(d, {.scheduler = s.get(), .trace = &rec});
  g.run({{"in", from(items)}}, {{"out", discard()}}).get();
  std::ostringstream os;
  rec.write_chrome_json(os);
  const std::string j = os.str();
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t p = j.find(what); p != std::string::npos; p = j.find(what, p + 1)) ++n;
    return n;
  };
  CHECK(count("\"name\":\"in/broadcast\",\"cat\":\"junction\"") == 50);
  CHECK(count("\"name\":\"pair\",\"cat\":\"junction\"") == 100);  // a unit from each input
}

TEST_CASE("dag sinks that write in order keep every unit of merged sources and of a broadcast merged back",
          "[dag][io]") {
  auto a = make_items(30, 4), b = make_items(20, 4);
  for (const char* p : policies) {
    INFO(p);
    auto s = two_workers(p);
    dag d;
    auto left = d.source("left");
    auto both = d.merge("both", {left, d.source("right")});
    d.sink("sum", both);
    // Unordered farms: both copies of a sequence number often wait for an earlier one.
    auto shuffled = [&](const char* n) { return d.add(n, farm(map<slow_inc>(), 4, farm_order::unordered), left); };
    d.sink("twice", d.merge("again", {shuffled("x"), shuffled("y")}));
    graph g(d, {.scheduler = s.get()});
    auto sum = std::make_shared<io::checksum_result>(), twice = std::make_shared<io::checksum_result>();
    g.run({{"left", from(a)}, {"right", from(b)}}, {{"sum", io::checksum(sum)}, {"twice", io::checksum(twice)}}).get();
    CHECK(sum->units == 50);
    CHECK(twice->units == 60);  // each unit of `left` twice, equal: the sum is defined
  }
}
