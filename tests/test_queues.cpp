#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <sinew/engine/bounded_queue.hpp>
#include <sinew/engine/spsc_queue.hpp>

#include "test_common.hpp"

using sinew_test::cpu_seconds;

using namespace sinew;

TEST_CASE("bounded_queue respects capacity and FIFO order", "[queue]") {
  bounded_queue<int> q(3);
  CHECK(q.try_push(1));
  CHECK(q.try_push(2));
  CHECK(q.try_push(3));
  CHECK_FALSE(q.try_push(4));  // full at the requested capacity, not the ring's
  int v = 0;
  CHECK(q.try_pop(v));
  CHECK(v == 1);
  CHECK(q.try_push(4));
  for (int want : {2, 3, 4}) {
    REQUIRE(q.try_pop(v));
    CHECK(v == want);
  }
  CHECK_FALSE(q.try_pop(v));
}

TEST_CASE("close ends the stream after draining", "[queue]") {
  spsc_queue<int> q(4);
  q.push(7);
  q.close();
  CHECK_FALSE(q.push(8));
  int v = 0;
  CHECK(q.pop(v));
  CHECK(v == 7);
  CHECK_FALSE(q.pop(v));
}

template <class Q>
void many_to_many(unsigned producers, unsigned consumers, int per_producer) {
  Q q(16);
  std::atomic<long long> sum{0};
  std::atomic<long> count{0};
  std::atomic<int> refused{0};  // Catch2 assertions are not thread safe: count here
  std::vector<std::thread> ts;
  for (unsigned p = 0; p < producers; ++p)
    ts.emplace_back([&, p] {
      for (int i = 1; i <= per_producer; ++i)
        if (!q.push(int(p) * per_producer + i)) refused++;
    });
  std::vector<std::thread> cs;
  for (unsigned c = 0; c < consumers; ++c)
    cs.emplace_back([&] {
      int v;
      while (q.pop(v)) {
        sum += v;
        ++count;
      }
    });
  for (auto& t : ts) t.join();
  q.close();
  for (auto& t : cs) t.join();
  long long n = (long long)producers * per_producer;
  CHECK(refused.load() == 0);
  CHECK(count.load() == n);
  CHECK(sum.load() == n * (n + 1) / 2);  // each value exactly once
}

TEST_CASE("MPMC queue loses and duplicates nothing", "[queue][tsan]") {
  many_to_many<bounded_queue<int>>(3, 3, 20000);
}

TEST_CASE("SPSC queue keeps order under load", "[queue][tsan]") {
  spsc_queue<int> q(8);
  const int n = 100000;
  std::thread p([&] {
    for (int i = 0; i < n; ++i) q.push(i);
    q.close();
  });
  int v, expect = 0;
  bool ordered = true;
  while (q.pop(v)) ordered &= (v == expect++);
  p.join();
  CHECK(ordered);
  CHECK(expect == n);
}

TEST_CASE("a blocked producer and consumer sleep instead of spinning", "[queue]") {
  bounded_queue<int> full(1), empty(1);
  full.push(0);
  std::thread prod([&] { full.push(1); });  // blocks: full
  std::thread cons([&] {
    int v;
    empty.pop(v);  // blocks: empty
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  double c0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double used = cpu_seconds() - c0;
  int v;
  full.pop(v);
  empty.push(5);
  prod.join();
  cons.join();
  CHECK(used < 0.025);  // < 5% of one core over 0.5 s
}

// Producers and consumers that pause now and then, so that both sides keep
// going to sleep on the futex (empty and full) and being woken: a lost
// wake-up hangs this test (ctest's timeout reports it), a lost or doubled
// value fails the sums.
template <class Q>
void sleepy_hand_offs(unsigned producers, unsigned consumers) {
  Q q(2);
  const int per_producer = 3000;
  std::atomic<long long> sum{0};
  std::atomic<long> count{0};
  std::vector<std::thread> ts;
  for (unsigned p = 0; p < producers; ++p)
    ts.emplace_back([&, p] {
      for (int i = 1; i <= per_producer; ++i) {
        q.push(int(p) * per_producer + i);
        if (i % 97 == int(p)) std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  std::vector<std::thread> cs;
  for (unsigned c = 0; c < consumers; ++c)
    cs.emplace_back([&, c] {
      int v;
      for (long k = 0; q.pop(v); ++k) {
        sum += v;
        ++count;
        if (k % 89 == long(c)) std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  for (auto& t : ts) t.join();
  q.close();
  for (auto& t : cs) t.join();
  long long n = (long long)producers * per_producer;
  CHECK(count.load() == n);
  CHECK(sum.load() == n * (n + 1) / 2);
}

TEST_CASE("queues that keep sleeping and waking lose no wake-up", "[queue][tsan]") {
  SECTION("spsc") { sleepy_hand_offs<spsc_queue<int>>(1, 1); }
  SECTION("mpmc") { sleepy_hand_offs<bounded_queue<int>>(3, 2); }
}
