// sinew::stream: a source fed by the caller's threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {
struct slow_inc {
  void operator()(int x, int* y) const {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    *y = x + 1;
  }
};
}  // namespace

TEST_CASE("a stream delivers every pushed item in order", "[stream][tsan]") {
  stream<std::vector<int>> in(8);
  std::vector<int> firsts;
  graph g(pipeline(map<inc>(), farm(map<twice>(), 3)));
  auto f = g.run(in.source(), for_each([&](const work_unit& u) { firsts.push_back(u.input<int>(0)[0]); }));
  std::atomic<int> refused{0};
  std::thread producer([&] {
    for (int i = 0; i < 5000; ++i)
      if (!in.push(std::vector<int>(3, i))) refused++;
    in.close();
  });
  producer.join();
  f.get();
  CHECK(refused.load() == 0);
  REQUIRE(firsts.size() == 5000);
  bool ok = true;
  for (int i = 0; i < 5000; ++i) ok &= firsts[std::size_t(i)] == 2 * (i + 1);
  CHECK(ok);
  CHECK_FALSE(in.push(std::vector<int>(3, 0)));  // closed
}

TEST_CASE("array items go to the graph without a copy", "[stream]") {
  stream<array<int>> in(4);
  std::vector<const int*> seen;
  graph g(map<square_in_place>());
  const int* pushed = nullptr;
  auto f = g.run(in.source(), for_each([&](const work_unit& u) { seen.push_back(u.input<int>(0).data()); }));
  array<int> a(std::size_t(16));
  for (std::size_t i = 0; i < 16; ++i) a[i] = int(i);
  pushed = a.data();
  in.push(std::move(a));
  in.close();
  f.get();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == pushed);
}

TEST_CASE("a slow graph holds the producer back", "[stream][tsan]") {
  stream<std::vector<int>> in(4);
  std::atomic<int> consumed{0};
  graph g(pipeline(map<slow_inc>(), map<inc>()), {.capacity = 2});
  auto f = g.run(in.source(), for_each([&](const work_unit&) { consumed++; }));
  int max_ahead = 0;
  for (int i = 0; i < 300; ++i) {
    in.push(std::vector<int>(1, i));
    max_ahead = std::max(max_ahead, i + 1 - consumed.load());
  }
  in.close();
  f.get();
  CHECK(consumed.load() == 300);
  auto st = f.stats();
  // Stream buffer + the units alive in the graph.
  CHECK(std::size_t(max_ahead) <= 4 + st.capacity_total + 2 + 1);
}

TEST_CASE("stop ends a stream and delivers what was accepted", "[stream][tsan]") {
  stream<std::vector<int>> in(16);
  std::atomic<std::uint64_t> got{0};
  graph g(pipeline(map<slow_inc>(), farm(map<inc>(), 2)));
  auto f = g.run(in.source(), for_each([&](const work_unit&) { got++; }));
  std::atomic<std::uint64_t> accepted{0};
  std::thread producer([&] {
    for (int i = 0;; ++i) {
      if (!in.push(std::vector<int>(2, i))) break;  // refused once the run stops
      accepted++;
    }
  });
  while (got.load() < 200) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  f.stop();
  producer.join();  // a push blocked on a full stream returns false
  f.get();
  auto st = f.stats();
  CHECK(st.units_in == accepted.load());
  CHECK(st.units_out == accepted.load());
  CHECK(st.units_alive == 0);
}

TEST_CASE("cancel ends a run whose stream producer went quiet", "[stream][tsan]") {
  stream<std::vector<int>> in(16);
  graph g(map<inc>());
  auto f = g.run(in.source(), discard());
  in.push(std::vector<int>(4, 1));
  // No close(): the source thread sleeps in the stream; cancel must wake it.
  f.cancel();
  REQUIRE(f.wait_for(std::chrono::seconds(20)));
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
  CHECK(f.stats().units_alive == 0);
}
