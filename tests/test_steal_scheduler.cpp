// The `steal` policy: the Chase-Lev deque, then the scheduler.
#include <catch2/catch.hpp>

#include "test_common.hpp"
#include "test_sched_common.hpp"

#include <sys/resource.h>

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

#include <sinew/detail/chase_lev_deque.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>

using namespace sinew;
using sinew::detail::chase_lev_deque;
using sched_test::scaled;
using sched_test::settled_stats;
using sched_test::wait_for_count;

namespace {

void spin_for(std::chrono::microseconds d) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < d) {
  }
}

bool all_once(const std::vector<std::atomic<std::uint8_t>>& v) {
  return std::all_of(v.begin(), v.end(), [](const auto& x) { return x.load() == 1; });
}

using steal_r = chase_lev_deque<std::uint32_t>::steal_result;

}  // namespace

// ------------------------------------------------------------------ deque

TEST_CASE("chase_lev_deque: owner pops LIFO, thieves steal FIFO", "[steal][deque]") {
  chase_lev_deque<std::uint32_t> d(8);
  std::uint32_t x = 0;
  CHECK_FALSE(d.pop(x));
  CHECK(d.steal(x) == steal_r::empty);
  for (std::uint32_t i = 1; i <= 5; ++i) d.push(i);
  CHECK(d.size_approx() == 5);
  REQUIRE(d.pop(x));
  CHECK(x == 5);
  REQUIRE(d.pop(x));
  CHECK(x == 4);
  REQUIRE(d.steal(x) == steal_r::success);
  CHECK(x == 1);
  REQUIRE(d.steal(x) == steal_r::success);
  CHECK(x == 2);
  REQUIRE(d.pop(x));
  CHECK(x == 3);
  CHECK_FALSE(d.pop(x));
  CHECK(d.steal(x) == steal_r::empty);
  CHECK(d.empty_approx());
  // Reusable after running dry (indices keep going).
  d.push(7);
  REQUIRE(d.steal(x) == steal_r::success);
  CHECK(x == 7);
  CHECK_FALSE(d.pop(x));
}

TEST_CASE("chase_lev_deque grows past its initial capacity", "[steal][deque]") {
  chase_lev_deque<std::uint32_t> d(4);
  CHECK(d.capacity() == 4);
  const std::uint32_t n = 10000;
  // Wrap the indices first so growth copies a range that straddles the end.
  for (std::uint32_t i = 0; i < 3; ++i) d.push(i);
  std::uint32_t x = 0;
  for (std::uint32_t i = 0; i < 3; ++i) REQUIRE(d.steal(x) == steal_r::success);
  for (std::uint32_t i = 0; i < n; ++i) d.push(i);
  CHECK(d.capacity() >= n);
  CHECK(d.size_approx() == n);
  // Steal the first half in order, pop the rest in reverse.
  for (std::uint32_t i = 0; i < n / 2; ++i) {
    REQUIRE(d.steal(x) == steal_r::success);
    REQUIRE(x == i);
  }
  for (std::uint32_t i = n; i-- > n / 2;) {
    REQUIRE(d.pop(x));
    REQUIRE(x == i);
  }
  CHECK_FALSE(d.pop(x));
}

TEST_CASE("chase_lev_deque: owner push/pop against thieves takes every item exactly once",
          "[steal][deque][tsan]") {
  const std::uint32_t items = std::uint32_t(scaled(2'000'000, 200'000));
  const unsigned thieves = 3;
  std::vector<std::atomic<std::uint8_t>> taken(items);
  chase_lev_deque<std::uint32_t> d(2);  // grows while thieves read
  std::atomic<bool> done{false};
  std::atomic<std::size_t> stolen{0}, lost{0};
  std::vector<std::thread> ts;
  for (unsigned k = 0; k < thieves; ++k)
    ts.emplace_back([&] {
      std::uint32_t x;
      for (;;) {
        bool fin = done.load();
        auto r = d.steal(x);
        if (r == steal_r::success) {
          taken[x].fetch_add(1);
          stolen.fetch_add(1, std::memory_order_relaxed);
        } else if (r == steal_r::lost_race) {
          lost.fetch_add(1, std::memory_order_relaxed);
        } else if (fin) {
          return;  // the owner finished before this empty look
        }
      }
    });
  std::mt19937 rng(42);
  std::uint32_t next = 0;
  std::size_t popped = 0;
  while (next < items) {
    unsigned burst = rng() % 16;
    for (unsigned i = 0; i < burst && next < items; ++i) d.push(next++);
    unsigned pops = rng() % 12;
    std::uint32_t x;
    for (unsigned i = 0; i < pops; ++i)
      if (d.pop(x)) {
        taken[x].fetch_add(1);
        ++popped;
      }
  }
  std::uint32_t x;
  while (d.pop(x)) {
    taken[x].fetch_add(1);
    ++popped;
  }
  done.store(true);
  for (auto& t : ts) t.join();
  CHECK(popped + stolen.load() == items);
  CHECK(all_once(taken));
  INFO("stolen " << stolen.load() << ", lost races " << lost.load());
  CHECK(stolen.load() > 0);
}

// ------------------------------------------------------------------ scheduler

TEST_CASE("steal_scheduler: tiny tasks submitted from outside all run exactly once",
          "[steal][scheduler][tsan]") {
  const std::size_t n = scaled(1'000'000, 200'000);
  steal_scheduler s(std::max(2u, std::thread::hardware_concurrency()));
  CHECK(std::string(s.name()) == "steal");
  std::vector<std::atomic<std::uint8_t>> hit(n);
  std::atomic<std::size_t> done{0};
  for (std::size_t i = 0; i < n; ++i)
    s.submit([&, i] {
      hit[i].fetch_add(1, std::memory_order_relaxed);
      done.fetch_add(1, std::memory_order_release);
    });
  REQUIRE(wait_for_count(done, n));
  CHECK(all_once(hit));
  auto st = settled_stats(s, n);
  CHECK(st.tasks_submitted == n);
  CHECK(st.tasks_run == n);
  std::uint64_t per_worker = 0;
  for (const auto& w : st.workers) per_worker += w.tasks;
  CHECK(per_worker == n);
  CHECK(st.workers.size() == s.concurrency());
}

TEST_CASE("steal_scheduler: random spawn trees lose no task and run none twice",
          "[steal][scheduler][tsan]") {
  const std::size_t trees = 12, nodes = scaled(20'000, 5'000);
  steal_scheduler s(3);  // more workers than cores on small machines: preemption mid-steal
  struct tree {
    std::vector<std::vector<std::uint32_t>> kids;
    std::vector<std::atomic<std::uint8_t>> hit;
    explicit tree(std::size_t n) : kids(n), hit(n) {}
  };
  std::vector<std::unique_ptr<tree>> ts;
  std::mt19937 rng(7);
  for (std::size_t k = 0; k < trees; ++k) {
    auto t = std::make_unique<tree>(nodes);
    for (std::uint32_t i = 1; i < nodes; ++i) {
      // Alternate bushy (random recursive) and deep (near-chain) shapes.
      std::uint32_t parent = (k % 2 == 0) ? std::uint32_t(rng() % i) : i - 1 - std::uint32_t(rng() % std::min<std::uint32_t>(i, 3));
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
      for (std::uint32_t c : tp->kids[i]) g->run([v, c] { (*v)(c); });
    };
    g->run([visit] { (*visit)(0); });
  }
  for (auto& g : groups) g->wait();
  bool ok = true;
  for (auto& t : ts) ok &= all_once(t->hit);
  CHECK(ok);
  auto st = settled_stats(s, trees * nodes);
  CHECK(st.tasks_run == trees * nodes);
  CHECK(st.tasks_submitted == trees * nodes);
}

TEST_CASE("steal_scheduler: parallel_for covers the range exactly once", "[steal][scheduler][tsan]") {
  steal_scheduler s(2);
  struct cfg {
    std::size_t n, grain;
  };
  for (cfg c : {cfg{100'000, 1000}, cfg{1, 1}, cfg{7, 100}, cfg{1000, 1}, cfg{12345, 0}, cfg{4097, 64}}) {
    std::vector<std::atomic<std::uint8_t>> v(c.n);
    std::atomic<bool> small{false};
    std::size_t g = c.grain ? c.grain : 1;
    s.parallel_for(c.n, c.grain, [&](std::size_t b, std::size_t e) {
      if (e - b < g / 2 && c.n >= g) small = true;
      if (e - b > g && e - b > 0) small = true;  // never longer than the grain either
      for (std::size_t i = b; i < e; ++i) v[i].fetch_add(1, std::memory_order_relaxed);
    });
    INFO("n " << c.n << " grain " << c.grain);
    CHECK(all_once(v));
    CHECK_FALSE(small.load());
  }
  bool called = false;
  s.parallel_for(0, 10, [&](std::size_t, std::size_t) { called = true; });
  CHECK_FALSE(called);
  auto st = s.stats();
  CHECK(st.parallel_fors == 6);  // n == 0 is not counted
  CHECK(st.load_balance() > 0.0);
  CHECK(st.load_balance() <= 1.0);
}

TEST_CASE("steal_scheduler: idle workers steal a worker's parallel_for blocks", "[steal][scheduler]") {
  steal_scheduler s(2);
  std::atomic<std::size_t> blocks{0};
  // From outside: the caller probes block 0, then two segments are injected;
  // whoever runs [1, 100) splits it onto its deque and waits there until the
  // other worker has stolen one of its blocks (however the OS schedules the
  // two threads). The spin keeps the loop too long to run inline.
  sched_test::steal_witness witness(1, 100);
  s.parallel_for(200, 1, [&](std::size_t b, std::size_t) {
    witness.block(b);
    spin_for(std::chrono::microseconds(200));
    blocks++;
  });
  CHECK(blocks.load() == 200);
  CHECK(witness.stolen());
  auto st = s.stats();
  std::uint64_t steals = 0, attempts = 0;
  for (const auto& w : st.workers) {
    steals += w.steals;
    attempts += w.steal_attempts;
  }
  CHECK(steals > 0);
  CHECK(attempts >= steals);
  CHECK(st.workers[0].tasks > 0);
  CHECK(st.workers[1].tasks > 0);
  s.reset_stats();
  st = s.stats();
  CHECK(st.parallel_fors == 0);
  CHECK(st.workers[0].steals == 0);
  CHECK(st.workers[1].tasks == 0);
}

TEST_CASE("steal_scheduler: nested parallel_for inside tasks does not deadlock",
          "[steal][scheduler][tsan]") {
  // More tasks than workers, each waiting on its own loop whose blocks contain
  // further loops: waiting workers must help.
  for (unsigned threads : {1u, 2u, 4u}) {
    steal_scheduler s(threads);
    const std::size_t tasks = scaled(48, 24), outer = 64, inner = scaled(200, 50);
    std::vector<std::atomic<std::uint8_t>> hit(tasks * outer * inner);
    task_group g(s);
    for (std::size_t t = 0; t < tasks; ++t)
      g.run([&, t] {
        s.parallel_for(outer, 4, [&](std::size_t ob, std::size_t oe) {
          for (std::size_t o = ob; o < oe; ++o)
            s.parallel_for(inner, 16, [&](std::size_t b, std::size_t e) {
              for (std::size_t i = b; i < e; ++i) hit[(t * outer + o) * inner + i].fetch_add(1);
            });
        });
      });
    g.wait();
    INFO("threads " << threads);
    CHECK(all_once(hit));
  }
  // And from outside, nested.
  steal_scheduler s(2);
  std::atomic<std::size_t> sum{0};
  s.parallel_for(100, 3, [&](std::size_t ob, std::size_t oe) {
    for (std::size_t o = ob; o < oe; ++o)
      s.parallel_for(100, 7, [&](std::size_t b, std::size_t e) { sum += e - b; });
  });
  CHECK(sum.load() == 100 * 100);
}

TEST_CASE("steal_scheduler: parallel_for propagates the first exception after running every block",
          "[steal][scheduler][tsan]") {
  steal_scheduler s(2);
  std::atomic<std::size_t> covered{0};
  CHECK_THROWS_WITH(s.parallel_for(1000, 10,
                                   [&](std::size_t b, std::size_t e) {
                                     covered += e - b;
                                     if (b <= 500 && 500 < e) throw std::runtime_error("block 500");
                                   }),
                    "block 500");
  CHECK(covered.load() == 1000);
  // Every block throws: one of them is rethrown.
  CHECK_THROWS_AS(s.parallel_for(100, 1, [](std::size_t, std::size_t) { throw std::logic_error("x"); }),
                  std::logic_error);
  // From a task: to the task's group.
  task_group g(s);
  g.run([&] {
    s.parallel_for(64, 1, [](std::size_t b, std::size_t) {
      if (b == 33) throw std::runtime_error("inner 33");
    });
  });
  CHECK_THROWS_WITH(g.wait(), "inner 33");
  // The scheduler still works.
  std::atomic<std::size_t> n{0};
  s.parallel_for(100, 1, [&](std::size_t b, std::size_t e) { n += e - b; });
  CHECK(n.load() == 100);
}

TEST_CASE("steal_scheduler: task_group rethrows the first exception", "[steal][scheduler]") {
  steal_scheduler s(2);
  task_group g(s);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i)
    g.run([&, i] {
      ran++;
      if (i == 50) throw std::runtime_error("task 50");
    });
  CHECK_THROWS_WITH(g.wait(), "task 50");
  CHECK(ran.load() == 100);
  g.wait();
}

TEST_CASE("steal_scheduler: a scheduler of n workers runs n tasks at once", "[steal][scheduler]") {
  for (unsigned n : {1u, 2u, 3u, 4u}) {
    steal_scheduler s(n);
    CHECK(s.concurrency() == n);
    for (int round = 0; round < 3; ++round) {  // also after the workers went to sleep
      std::atomic<unsigned> arrived{0};
      std::atomic<bool> all_met{true};
      task_group g(s);
      for (unsigned i = 0; i < n; ++i)
        g.run([&] {
          arrived++;
          auto t0 = std::chrono::steady_clock::now();
          while (arrived.load() < n) {  // a barrier: needs n tasks running together
            if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
              all_met = false;
              return;
            }
            std::this_thread::yield();
          }
        });
      g.wait();
      INFO("n " << n << " round " << round);
      CHECK(all_met.load());
      std::this_thread::sleep_for(std::chrono::milliseconds(round * 20));
    }
  }
}

TEST_CASE("steal_scheduler: tasks submitted by a worker are stolen by the others",
          "[steal][scheduler][tsan]") {
  steal_scheduler s(2);
  std::atomic<std::size_t> done{0};
  // The kids sit on the parent's deque; the parent's worker then waits until
  // a kid has run on another thread, which can only have stolen it.
  const std::size_t kids = 1000;
  sched_test::steal_witness witness(0, 1);
  s.submit([&] {
    for (std::size_t i = 0; i < kids; ++i)
      s.submit([&] {
        witness.block(0);
        spin_for(std::chrono::microseconds(10));
        done.fetch_add(1);
      });
    witness.block(0);
  });
  REQUIRE(wait_for_count(done, kids));
  CHECK(witness.stolen());
  std::uint64_t steals = 0;
  for (const auto& w : s.stats().workers) steals += w.steals;
  CHECK(steals > 0);
}

TEST_CASE("steal_scheduler: a lone task of a busy worker is stolen after a chain of tasks",
          "[steal][scheduler][tsan]") {
  // A chain (each task submitting the next) makes the idle worker leave lone
  // tasks to their owner and then wait calmly between looks; the chain's
  // last task submits one more and stays busy until that one has run on
  // the other thread, which must still steal it.
  steal_scheduler s(2);
  std::atomic<bool> done{false};
  sched_test::steal_witness witness(0, 1);
  std::function<void(int)> link = [&](int left) {
    if (left > 0) {
      s.submit([&link, left] { link(left - 1); });
      return;
    }
    s.submit([&] {
      witness.block(0);
      done.store(true);
    });
    witness.block(0);
  };
  s.submit([&link] { link(scaled(20000, 2000)); });
  const auto t0 = std::chrono::steady_clock::now();
  while (!done.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(done.load());
  CHECK(witness.stolen());
}

TEST_CASE("steal_scheduler: the destructor runs every submitted task", "[steal][scheduler][tsan]") {
  std::atomic<std::size_t> done{0};
  const std::size_t n = scaled(20'000, 2'000);
  {
    steal_scheduler s(2);
    for (std::size_t i = 0; i < n; ++i)
      s.submit([&s, &done, i] {
        if (i % 100 == 0) s.submit([&done] { done.fetch_add(1); });  // spawned during shutdown
        done.fetch_add(1);
      });
  }
  CHECK(done.load() == n + n / 100);
}

TEST_CASE("steal_scheduler: works unpinned and with one worker", "[steal][scheduler][tsan]") {
  for (unsigned threads : {1u, 3u}) {
    steal_scheduler s(threads, false);
    std::atomic<std::size_t> sum{0};
    task_group g(s);
    for (int i = 0; i < 100; ++i)
      g.run([&] { s.parallel_for(100, 10, [&](std::size_t b, std::size_t e) { sum += e - b; }); });
    g.wait();
    CHECK(sum.load() == 100 * 100);
  }
}

TEST_CASE("steal_scheduler: an idle scheduler uses almost no CPU", "[steal][scheduler]") {
  steal_scheduler s;  // every hardware thread
  // Some work first, so every worker has been awake.
  std::atomic<std::size_t> sum{0};
  s.parallel_for(10'000, 10, [&](std::size_t b, std::size_t e) { sum += e - b; });
  REQUIRE(sum.load() == 10'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // settle (other schedulers too)
  double c0 = sinew_test::cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double used = sinew_test::cpu_seconds() - c0;
  INFO("CPU seconds used in 0.5 s idle: " << used);
  CHECK(used < 0.025);  // 5% of one core
  // Still wakes up.
  std::atomic<std::size_t> done{0};
  s.submit([&] { done++; });
  CHECK(wait_for_count(done, 1, std::chrono::seconds(10)));
}
