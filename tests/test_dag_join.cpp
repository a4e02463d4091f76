// Dag joins by key: FIFO matching per key, the window, unmatched units
// dropped and counted or failing the run, ended inputs, fresh numbering.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

// Items of two ints: a key and a payload (the item's index).
std::vector<std::vector<int>> keyed(const std::vector<int>& keys) {
  std::vector<std::vector<int>> v;
  for (std::size_t k = 0; k < keys.size(); ++k) v.push_back({keys[k], int(k)});
  return v;
}

std::uint64_t key0(const work_unit& u) { return std::uint64_t(u.input<int>(0)[0]); }

// Per joined unit: the payloads of its buffers, in input order.
struct joined {
  std::vector<std::vector<int>> payloads;
  std::vector<std::uint64_t> seqs;
  std::set<std::uint32_t> origins;
  sink make() {
    return for_each([this](const work_unit& u) {
      std::vector<int> p;
      for (unsigned b = 0; b < u.in().size(); ++b) {
        auto v = u.input<int>(b);
        p.push_back(v[1]);
      }
      payloads.push_back(p);
      seqs.push_back(u.seq());
      origins.insert(u.origin());
    });
  }
};

// What FIFO matching per key makes of inputs that all arrive in order with
// no unit dropped by the window: the k-th unit of a key of every input
// together, as payload tuples.
std::multiset<std::vector<int>> fifo_matches(const std::vector<std::vector<std::vector<int>>>& ins) {
  std::map<int, std::vector<std::deque<int>>> by_key;
  for (std::size_t i = 0; i < ins.size(); ++i)
    for (const auto& it : ins[i]) {
      auto& q = by_key[it[0]];
      q.resize(ins.size());
      q[i].push_back(it[1]);
    }
  std::multiset<std::vector<int>> out;
  for (auto& [key, q] : by_key)
    for (;;) {
      std::vector<int> t;
      for (auto& d : q) {
        if (d.empty()) break;
        t.push_back(d.front());
      }
      if (t.size() < ins.size()) break;
      for (auto& d : q) d.pop_front();
      out.insert(t);
    }
  return out;
}

double unmatched_of(const run_stats& st, const std::string& path) {
  for (const auto& s : st.stages)
    if (s.path == path)
      for (const auto& [name, v] : s.counters)
        if (name == "unmatched") return v;
  return 0;
}

// The failed run's error: its node path and message.
std::pair<std::string, std::string> failure(run_future& f) {
  try {
    f.get();
  } catch (const node_error& e) {
    return {e.path(), e.what()};
  }
  FAIL("the run did not fail");
  return {};
}

std::uint64_t units_of(const run_stats& st, const std::string& path) {
  for (const auto& s : st.stages)
    if (s.path == path) return s.units;
  return 0;
}

}  // namespace

TEST_CASE("dag join pairs the oldest waiting units of a key from every input on every policy", "[dag][join][tsan]") {
  std::vector<int> lk, rk, tk;
  for (int k = 0; k < 240; ++k) lk.push_back(k * 7 % 23);
  for (int k = 0; k < 200; ++k) rk.push_back(k * 5 % 19);
  for (int k = 0; k < 150; ++k) tk.push_back(k % 21);
  auto left = keyed(lk), right = keyed(rk), third = keyed(tk);
  for (const char* p : policies)
    for (int inputs = 2; inputs <= 3; ++inputs) {
      INFO(p << ", " << inputs << " inputs");
      auto s = make_scheduler(p, {.threads = 2, .pin = false});
      dag d;
      // The left branch adds 1 to key and payload: its key function takes it off.
      auto l = d.add("inc", map<inc>(), d.source("left"));
      std::vector<dag::port> ins{l, d.source("right")};
      std::vector<key_function> keys{[](const work_unit& u) { return key0(u) - 1; }, key0};
      if (inputs == 3) {
        ins.push_back(d.source("third"));
        keys.push_back(key0);
      }
      d.sink("out", d.join("pairs", ins, keys));
      graph g(d, {.scheduler = s.get()});
      joined out;
      graph::named_sources srcs{{"left", from(left)}, {"right", from(right)}};
      if (inputs == 3) srcs.emplace_back("third", from(third));
      auto f = g.run(srcs, {{"out", out.make()}});
      f.get();
      std::vector<std::vector<std::vector<int>>> want_in{left, right};
      if (inputs == 3) want_in.push_back(third);
      auto want = fifo_matches(want_in);
      REQUIRE(!want.empty());
      std::multiset<std::vector<int>> got;
      for (auto t : out.payloads) {
        t[0] -= 1;  // the left branch's +1
        got.insert(t);
      }
      CHECK(got == want);  // the payloads name the items: their keys are equal
      // Numbered afresh, 0..n-1, with an origin that is no source's.
      std::vector<std::uint64_t> seqs = out.seqs;
      std::sort(seqs.begin(), seqs.end());
      std::vector<std::uint64_t> dense(seqs.size());
      std::iota(dense.begin(), dense.end(), 0);
      CHECK(seqs == dense);
      REQUIRE(out.origins.size() == 1);
      CHECK(*out.origins.begin() >= std::uint32_t(inputs));
      auto st = f.stats();
      std::size_t total = left.size() + right.size() + (inputs == 3 ? third.size() : 0);
      CHECK(unmatched_of(st, "pairs") == double(total - std::size_t(inputs) * want.size()));
      CHECK(st.units_out == want.size());
      CHECK(st.units_alive == 0);
    }
}

TEST_CASE("dag join drops the oldest waiting unit past its window and counts it", "[dag][join][tsan]") {
  // Every left unit is taken before the first right one comes: with a window
  // of 8, only the last 8 left units still wait when their keys arrive.
  const int n = 100;
  for (const char* p : policies)
    for (bool fail : {false, true}) {
      INFO(p << (fail ? ", failing" : ", dropping"));
      auto s = make_scheduler(p, {.threads = 2, .pin = false});
      dag d;
      d.sink("out", d.join("pairs", {d.source("left"), d.source("right")}, {key0},
                           {.window = 8, .unmatched = fail ? join_unmatched::fail : join_unmatched::drop}));
      graph g(d, {.scheduler = s.get()});
      stream<std::vector<int>> left(16), right(16);
      joined out;
      auto f = g.run({{"left", left.source()}, {"right", right.source()}}, {{"out", out.make()}});
      auto taken = [&](std::uint64_t k) {
        for (int t = 0; t < 6000 && units_of(f.stats(), "pairs") < k && !f.wait_for(std::chrono::seconds(0)); ++t)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return units_of(f.stats(), "pairs");
      };
      for (int k = 0; k < n; ++k) left.push({k, k});
      if (fail) {  // left unit 0 leaves the window when the ninth waits
        left.close();
        right.close();
        REQUIRE(f.wait_for(std::chrono::seconds(60)));
        auto [path, what] = failure(f);
        CHECK(path == "pairs");
        CHECK_THAT(what, Catch::Contains("unit 0 from input 0 ('left') with key 0 has no match: 8 unit(s) of its "
                                         "input came after it unmatched (the join's window)"));
        CHECK(f.stats().units_alive == 0);
        continue;
      }
      REQUIRE(taken(n) == std::uint64_t(n));
      for (int k = 0; k < n; ++k) right.push({k, 1000 + k});
      REQUIRE(taken(2 * n) == std::uint64_t(2 * n));
      left.close();
      right.close();
      f.get();
      // Left 0..91 left the window unmatched; right 0..91 found none and
      // went too (right 84..91 at the end); left and right 92..99 matched.
      std::multiset<std::vector<int>> got(out.payloads.begin(), out.payloads.end()), want;
      for (int k = n - 8; k < n; ++k) want.insert({k, 1000 + k});
      CHECK(got == want);
      auto st = f.stats();
      CHECK(unmatched_of(st, "pairs") == double(2 * n - 16));
      CHECK(st.units_alive == 0);
    }
}

TEST_CASE("dag join units without a match after an input ended fail the run naming the branch and key", "[dag][join][tsan]") {
  auto left = keyed({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), right = keyed({0, 1, 2, 3, 4, 5, 6, 7, 8});
  for (const char* p : policies) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 2, .pin = false});
    dag d;
    d.sink("out", d.join("pairs", {d.source("left"), d.source("right")}, {key0},
                         {.unmatched = join_unmatched::fail}));
    graph g(d, {.scheduler = s.get()});
    auto f = g.run({{"left", from(left)}, {"right", from(right)}}, {{"out", discard()}});
    auto [path, what] = failure(f);
    CHECK(path == "pairs");
    CHECK_THAT(what, Catch::Contains("unit 9 from input 0 ('left') with key 9 has no match: input 1 ('right') has ended"));
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("dag join of a capacity-1 slow branch and an unordered wide one matches every unit", "[dag][join][tsan]") {
  // Out of one broadcast: the slow branch copies, the fast one doubles out of
  // order; every unit's key (its index) reaches the join on both inputs.
  struct slow_copy {
    void operator()(int x, int* y) const {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      *y = x;
    }
  };
  std::vector<int> keys(300);
  std::iota(keys.begin(), keys.end(), 0);
  auto items = keyed(keys);
  for (const char* p : policies) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 2, .pin = false});
    dag d;
    auto in = d.source("in");
    auto slow = d.add("slow", pipeline(map<slow_copy>(), map<slow_copy>()).capacity(1), in);
    auto fast = d.add("fast", farm(map<twice>(), 4, farm_order::unordered), in);
    d.sink("out", d.join("pairs", {slow, fast}, {key0, [](const work_unit& u) { return key0(u) / 2; }}));
    graph g(d, {.scheduler = s.get(), .capacity = 0});
    joined out;
    auto f = g.run({{"in", from(items)}}, {{"out", out.make()}});
    REQUIRE(f.wait_for(std::chrono::seconds(60)));
    f.get();
    std::multiset<std::vector<int>> got(out.payloads.begin(), out.payloads.end()), want;
    for (int k = 0; k < 300; ++k) want.insert({k, 2 * k});
    CHECK(got == want);
    CHECK(unmatched_of(f.stats(), "pairs") == 0);
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("dag join build errors name the join", "[dag][join]") {
  dag d;
  auto a = d.source("a"), b = d.source("b");
  CHECK_THROWS_WITH(d.join("j", {a}, {key0}), Catch::Contains("a join needs at least 2 inputs"));
  CHECK_THROWS_WITH(d.join("j", {a, b}, {key0, key0, key0}),
                    Catch::Contains("one key function for every input, or one per input (2), not 3"));
  CHECK_THROWS_WITH(d.join("j", {a, b}, {key_function{}}), Catch::Contains("key function 0 is empty"));
  CHECK_THROWS_WITH(d.join("j", {a, b}, {key0}, {.window = 0}), Catch::Contains("window must hold at least 1 unit"));
  // Records are units here: a join pairs whole units.
  d.sink("out", d.join("j", {a, b}, {key0}));
  CHECK(d.whole_unit_at() == "j (a join pairs units)");
}
