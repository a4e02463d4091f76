#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>

#include "test_common.hpp"

using namespace sinew;

// These exercise the oneTBB policy, whose hand-offs happen inside libtbb
// (not instrumented): they are not part of the ThreadSanitizer subset.

TEST_CASE("task_group runs every task once and waits", "[scheduler]") {
  tbb_scheduler s(2);
  std::vector<std::atomic<int>> hit(5000);
  task_group g(s);
  for (std::size_t i = 0; i < hit.size(); ++i) g.run([&, i] { hit[i]++; });
  g.wait();
  bool once = true;
  for (auto& h : hit) once &= h.load() == 1;
  CHECK(once);
  // The scheduler counts a task after its function returns, which may be
  // just after wait() saw the group finish.
  for (int i = 0; i < 1000 && s.stats().tasks_run < 5000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(s.stats().tasks_run >= 5000);
}

TEST_CASE("task_group rethrows the first exception", "[scheduler]") {
  tbb_scheduler s(2);
  task_group g(s);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i)
    g.run([&, i] {
      ran++;
      if (i == 50) throw std::runtime_error("task 50");
    });
  CHECK_THROWS_WITH(g.wait(), "task 50");
  CHECK(ran.load() == 100);
  g.wait();  // error consumed
}

TEST_CASE("parallel_for covers the range exactly once in blocks of at least half the grain", "[scheduler]") {
  tbb_scheduler s(2);
  const std::size_t n = 100000, grain = 1000;
  std::vector<int> v(n, 0);
  std::atomic<bool> small_block{false};
  s.parallel_for(n, grain, [&](std::size_t b, std::size_t e) {
    if (e - b < grain / 2) small_block = true;
    for (std::size_t i = b; i < e; ++i) v[i]++;
  });
  CHECK(std::accumulate(v.begin(), v.end(), std::size_t(0)) == n);
  CHECK(std::all_of(v.begin(), v.end(), [](int x) { return x == 1; }));
  CHECK_FALSE(small_block.load());
  auto st = s.stats();
  CHECK(st.parallel_fors == 1);
  CHECK(st.load_balance() > 0.0);
  CHECK(st.load_balance() <= 1.0);
}

TEST_CASE("parallel_for propagates an exception", "[scheduler]") {
  tbb_scheduler s(2);
  CHECK_THROWS_WITH(s.parallel_for(1000, 10,
                                   [](std::size_t b, std::size_t) {
                                     if (b == 500) throw std::runtime_error("block 500");
                                   }),
                    "block 500");
}

TEST_CASE("parallel_for at unit rate: every block once, exceptions from lingering workers come back",
          "[scheduler][linger][tsan]") {
  // Loops 50 µs apart keep idle workers lingering; they run the next loop's
  // blocks in place (workers/loop_linger.hpp), here also when they throw.
  tbb_scheduler s(4);
  const auto caller = std::this_thread::get_id();
  std::vector<int> v(4096);
  for (int loop = 0; loop < 300; ++loop) {
    std::fill(v.begin(), v.end(), 0);
    if (loop % 10 == 9) {
      std::atomic<bool> threw{false};
      try {
        s.parallel_for(v.size(), 16, [&](std::size_t b, std::size_t e) {
          for (std::size_t i = b; i < e; ++i) v[i]++;
          if (std::this_thread::get_id() != caller) {
            threw = true;
            throw std::runtime_error("block on a worker");
          }
        });
        CHECK_FALSE(threw.load());  // ran on the caller alone: nothing thrown
      } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "block on a worker");
      }
    } else {
      s.parallel_for(v.size(), 16, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) v[i]++;
      });
      REQUIRE(std::all_of(v.begin(), v.end(), [](int x) { return x == 1; }));
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(50)) {}
  }
}

TEST_CASE("a scheduler of n workers runs n tasks at once", "[scheduler]") {
  for (unsigned n : {1u, 2u, 3u}) {
    tbb_scheduler s(n);
    std::atomic<unsigned> arrived{0};
    std::atomic<bool> all_met{true};
    task_group g(s);
    for (unsigned i = 0; i < n; ++i)
      g.run([&] {
        arrived++;
        auto t0 = std::chrono::steady_clock::now();
        while (arrived.load() < n)  // a barrier: needs n tasks running together
          if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
            all_met = false;
            return;
          } else {
            std::this_thread::yield();
          }
      });
    g.wait();
    CHECK(all_met.load());
    CHECK(s.concurrency() == n);
  }
}

// The tbb policy's waiting threads: a thread from outside sleeps (the
// arena's reserved slot is for a parallel_for's caller); a worker of ours
// waiting runs the arena's tasks meanwhile.

TEST_CASE("a worker waiting for a nested task_group runs its tasks (tbb)", "[scheduler]") {
  // The only worker of tbb_scheduler(1) waits for a group it made: the
  // group's task can only run on that worker (asleep, it would hang here).
  tbb_scheduler s(1);
  std::atomic<std::thread::id> inner_thread{}, outer_thread{};
  task_group outer(s);
  outer.run([&] {
    outer_thread = std::this_thread::get_id();
    task_group inner(s);
    inner.run([&] { inner_thread = std::this_thread::get_id(); });
    inner.wait();
  });
  outer.wait();
  CHECK(inner_thread.load() == outer_thread.load());
  CHECK(outer_thread.load() != std::this_thread::get_id());  // the waiter outside slept
}

TEST_CASE("help_until: a thread from outside sleeps while the workers run the tasks (tbb)", "[scheduler]") {
  // n workers run a graph on n threads: the caller of get() does not join them.
  tbb_scheduler s(1);
  detail::help_latch done;
  std::atomic<std::thread::id> b_thread{};
  s.submit([&] {
    b_thread = std::this_thread::get_id();
    done.open();
  });
  s.help_until(done);
  CHECK(done.is_open());
  CHECK(b_thread.load() != std::thread::id{});
  CHECK(b_thread.load() != std::this_thread::get_id());
}

TEST_CASE("help_until on a worker runs queued tasks until the latch opens (tbb)", "[scheduler]") {
  // The only worker waits for a latch that only a task queued behind it
  // opens: asleep, it would never open.
  tbb_scheduler s(1);
  std::atomic<bool> finished{false};
  std::atomic<std::thread::id> waiter{}, opener{};
  s.submit([&] {
    waiter = std::this_thread::get_id();
    detail::help_latch inner;
    s.submit([&] {
      opener = std::this_thread::get_id();
      inner.open();
    });
    s.help_until(inner);
    finished = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  while (!finished.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::yield();
  REQUIRE(finished.load());
  CHECK(opener.load() == waiter.load());
}

TEST_CASE("graph runs waited on by every worker of another tbb_scheduler complete (tbb)", "[scheduler][runtime]") {
  // The waiters are oneTBB workers of another arena: they sleep, and the
  // graphs' own arena still gets its n workers from oneTBB's pool.
  tbb_scheduler outer(2), inner(2);
  graph g(pipeline(map<sinew_test::inc>(), farm(map<sinew_test::inc>(), 2)), {.scheduler = &inner});
  std::atomic<int> ok{0};
  task_group tg(outer);
  for (int t = 0; t < 4; ++t)
    tg.run([&] {
      std::vector<std::vector<int>> in(200, std::vector<int>(4, 1)), out;
      g.run(in, out).get();
      if (out.size() == 200 && out[199][3] == 3) ok++;
    });
  tg.wait();
  CHECK(ok.load() == 4);
}

TEST_CASE("help_latch runs each waiter's hook once, and refuses one armed after opening", "[scheduler]") {
  detail::help_latch l;
  int hooks = 0, others = 0;
  CHECK(l.arm([&] { ++hooks; }));
  CHECK(l.arm([&] { ++others; }));  // a second waiting thread
  CHECK_FALSE(l.is_open());
  l.open();
  l.open();
  CHECK(hooks == 1);
  CHECK(others == 1);
  CHECK(l.is_open());
  CHECK_FALSE(l.arm([&] { ++hooks; }));
  l.wait();  // returns at once
  CHECK(hooks == 1);
}

TEST_CASE("two threads waiting for one run both return (tbb)", "[scheduler][runtime]") {
  tbb_scheduler s(2);
  graph g(pipeline(map<sinew_test::inc>(), farm(map<sinew_test::inc>(), 2)), {.scheduler = &s});
  std::vector<std::vector<int>> in(2000, std::vector<int>(8, 1)), out;
  auto f = g.run(in, out);
  std::thread other([f] { f.wait(); });
  f.get();
  other.join();
  CHECK(out.size() == 2000);
  CHECK(out[1999][7] == 3);
}

// A task counts itself done in the group before its oneTBB task has
// returned; a group destroyed in that window must not fail (oneTBB's
// ~task_group throws missing_wait when a task is still running: terminate).
TEST_CASE("task_groups waited and destroyed at once many times from outside and inside (tbb)", "[scheduler]") {
  tbb_scheduler s(2);
  std::atomic<long> ran{0};
  for (int i = 0; i < 3000; ++i) {
    task_group g(s);
    g.run([&] { ran++; });
    if (i % 2) g.wait();  // else the destructor waits
  }
  CHECK(ran.load() == 3000);
  task_group outer(s);
  for (int i = 0; i < 200; ++i)
    outer.run([&] {  // a worker waiting for its own group
      task_group inner(s);
      for (int k = 0; k < 4; ++k) inner.run([&] { ran++; });
      inner.wait();
    });
  outer.wait();
  CHECK(ran.load() == 3000 + 800);
}

TEST_CASE("make_scheduler builds every registered policy by name", "[sched]") {
  const auto names = sinew::scheduler_names();
  CHECK(names == std::vector<std::string>{"deal", "steal", "tbb"});
  for (const auto& n : names) {
    auto s = sinew::make_scheduler(n, {.threads = 2});
    REQUIRE(s);
    CHECK(std::string(s->name()) == n);
    std::atomic<int> sum{0};
    sinew::task_group tg(*s);
    for (int i = 1; i <= 50; ++i) tg.run([&sum, i] { sum += i; });
    tg.wait();
    CHECK(sum == 1275);
  }
  auto numa = sinew::make_scheduler("deal", {.topology = sinew::topology::synthetic(2, 2)});
  CHECK(numa->concurrency() == 4);
  CHECK_THROWS_WITH(sinew::make_scheduler("fifo"),
                    "unknown scheduler policy 'fifo' (known: deal, steal, tbb)");
  CHECK_THROWS_WITH(sinew::scheduler_registration("steal", [](const sinew::scheduler_options&) {
                      return std::unique_ptr<sinew::scheduler>();
                    }),
                    "scheduler policy 'steal' is registered twice");
}

// Plain submissions are oneTBB tasks outside any task_group: the destructor
// waits for them by the scheduler's own counts (submitted before queued,
// ended after run), in every arena, whether spawned, enqueued or hinted.
TEST_CASE("tbb_scheduler: the destructor runs every submitted task and counts submissions since a reset", "[scheduler][tsan]") {
  std::atomic<std::size_t> done{0};
  const std::size_t n = 5'000;
  {
    tbb_scheduler s(sinew::topology::synthetic(2, 2));  // two arenas
    for (int i = 0; i < 1000; ++i) s.submit([] {});
    s.reset_stats();
    for (std::size_t i = 0; i < n; ++i)
      s.submit([&s, &done, i] {
        if (i % 50 == 0) {
          s.submit([&done] {  // spawned during shutdown
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            done.fetch_add(1);
          });
          // Hinted: the other arena holds its data, so it is enqueued there.
          const std::uint64_t D[2] = {s.current_node() == 0 ? 0u : 4096u, s.current_node() == 0 ? 4096u : 0u};
          s.submit([&done] { done.fetch_add(1); }, {.bytes_on_node = D});
        }
        done.fetch_add(1);
      });
    const std::uint64_t submitted = s.stats().tasks_submitted;  // some children may come later
    CHECK(submitted >= n);
    CHECK(submitted <= n + 2 * (n / 50));
  }
  CHECK(done.load() == n + 2 * (n / 50));
}

TEST_CASE("submit_backup runs its function once whoever submits it and the destructor runs one still waiting", "[scheduler][tsan]") {
  for (const std::string name : {"tbb", "steal", "deal"}) {
    INFO(name);
    std::atomic<int> outside{0}, inside{0}, forwarded{0};
    {
      auto s = make_scheduler(name, {.threads = 2});
      // From outside: on the timer thread after the grace period, no task.
      const std::uint64_t run_before = s->stats().tasks_run;
      const auto t0 = std::chrono::steady_clock::now();
      std::atomic<std::int64_t> waited_us{-1};
      s->submit_backup([&] {
        waited_us.store(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
      });
      while (waited_us.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      CHECK(waited_us.load() >= 100);
      CHECK(s->stats().tasks_run == run_before);
      for (int i = 0; i < 200; ++i) s->submit_backup([&] { outside.fetch_add(1); });
      // From a task: as a submit, onto that worker; a backup check may submit.
      std::atomic<bool> pending{true};
      task_group tg(*s);
      tg.run([&] {
        s->submit_backup([&] {
          inside.fetch_add(1);
          if (pending.load()) s->submit([&] { if (pending.exchange(false)) forwarded.fetch_add(1); });
        });
      });
      tg.wait();
      s->submit_backup([&] {  // still queued when the destructor starts
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        outside.fetch_add(1);
      });
    }
    CHECK(outside.load() == 201);
    CHECK(inside.load() == 1);
    CHECK(forwarded.load() == 1);
  }
}

TEST_CASE("tbb_scheduler: plain submissions with data hints run in their data's arena and count its bytes", "[scheduler][tsan]") {
  tbb_scheduler s(sinew::topology::synthetic(2, 2));
  const std::size_t n = 200;
  std::atomic<std::size_t> done{0}, on_data{0};
  const std::uint64_t D[2] = {1024, 3072};  // node 1 holds most
  for (std::size_t i = 0; i < n; ++i)
    s.submit(
        [&] {
          if (s.current_node() == 1) on_data.fetch_add(1);
          done.fetch_add(1);
        },
        {.bytes_on_node = D});
  for (int k = 0; k < 20000 && done.load() < n; ++k) std::this_thread::sleep_for(std::chrono::microseconds(500));
  REQUIRE(done.load() == n);
  CHECK(on_data.load() == n);
  // Counted before each function runs: all there once every one has run.
  const auto st = s.stats();
  CHECK(st.hinted_bytes() == n * 4096);
  CHECK(st.remote_bytes() == n * 1024);
}
