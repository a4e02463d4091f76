// Map dispatch ([Zhang18, §3.3]: push-based dispatch of work-groups). A
// parallel_for's chunks are pushed to the workers in one step, only as
// many sleeping workers as there are chunks are woken, and a
// loop of a single chunk (or of chunks together cheaper than a wake-up)
// runs on the caller.
#include <catch2/catch.hpp>

#include "test_common.hpp"
#include "test_sched_common.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>

using namespace sinew;

namespace {

std::unique_ptr<scheduler> four_workers(const std::string& p) {
  if (p == "steal") return std::make_unique<steal_scheduler>(4, false);
  deal_options o;
  o.pin = false;
  return std::make_unique<deal_scheduler>(topology::synthetic(1, 4), o);
}

// Lets every worker reach its futex sleep (they spin / back off briefly first).
void let_workers_sleep() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

struct thread_set {
  std::mutex m;
  std::set<std::thread::id> ids;
  void add() {
    std::lock_guard<std::mutex> lk(m);
    ids.insert(std::this_thread::get_id());
  }
};

// Busy work long enough that a loop of two chunks is worth dispatching.
void spin_us(int us) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(us)) {
  }
}

}  // namespace

TEST_CASE("map dispatch: a 2-chunk map on 4 sleeping workers wakes at most 2 of them",
          "[sched3][scheduler][tsan]") {
  const std::string p = GENERATE("steal", "deal");
  INFO("policy " << p);
  auto s = four_workers(p);
  let_workers_sleep();
  s->reset_stats();
  thread_set ran;
  std::atomic<int> blocks{0}, bad_blocks{0};  // no CHECK on workers: Catch2 is not thread-safe
  s->parallel_for(2000, 1000, [&](std::size_t b, std::size_t e) {
    if (e - b != 1000) bad_blocks++;
    ran.add();
    blocks++;
    spin_us(200);
  });
  CHECK(blocks.load() == 2);
  CHECK(bad_blocks.load() == 0);
  auto st = s->stats();
  CHECK(st.wakeups <= 2);
  CHECK(ran.ids.size() <= 2);
  CHECK(ran.ids.count(std::this_thread::get_id()) == 0);  // from outside: workers run it
  CHECK(st.parallel_fors == 1);
  CHECK(st.parallel_fors_inline == 0);
}

TEST_CASE("map dispatch: from inside a task a 2-chunk map wakes at most one more worker",
          "[sched3][scheduler][tsan]") {
  const std::string p = GENERATE("steal", "deal");
  INFO("policy " << p);
  auto s = four_workers(p);
  let_workers_sleep();
  std::uint64_t before = 0, after = 0;
  std::size_t threads = 0;
  {
    task_group g(*s);
    std::atomic<bool> go{false};
    g.run([&] {
      // The submit that woke this worker counts its wake-up after the
      // futex call returns: start once run() has returned.
      while (!go.load()) std::this_thread::yield();
      before = s->stats().wakeups;
      thread_set ran;
      s->parallel_for(2, 1, [&](std::size_t, std::size_t) {
        ran.add();
        spin_us(200);
      });
      after = s->stats().wakeups;
      threads = ran.ids.size();
    });
    go = true;
    g.wait();
  }
  CHECK(after - before <= 1);
  CHECK(threads >= 1);
  CHECK(threads <= 2);
}

TEST_CASE("map dispatch: a one-chunk loop and loops of trivial chunks run on the caller",
          "[sched3][scheduler][tsan]") {
  const std::string p = GENERATE("steal", "deal");
  INFO("policy " << p);
  auto s = four_workers(p);
  let_workers_sleep();
  s->reset_stats();
  thread_set ran;
  std::atomic<bool> whole{false};
  s->parallel_for(100, 100, [&](std::size_t b, std::size_t e) {
    whole = b == 0 && e == 100;
    ran.add();
  });
  CHECK(whole.load());
  CHECK(ran.ids == std::set<std::thread::id>{std::this_thread::get_id()});
  auto st = s->stats();
  CHECK(st.wakeups == 0);
  CHECK(st.parallel_fors_inline == 1);
  // 16 empty chunks (the fewest a loop over four workers probes) cost far
  // less than waking a worker: the caller runs them. The decision times the
  // first chunk, so allow for a preempted probe: at least one of 20 loops
  // must stay inline; ThreadSanitizer slows the probe past the limit, so
  // there only the one-chunk loop counts. 16 chunks give the probe 10 µs /
  // 15 (64 gave it 159 ns, within reach of the two clock reads around it).
  std::atomic<std::size_t> covered{0};
  for (int k = 0; k < 20; ++k)
    s->parallel_for(16, 1, [&](std::size_t b, std::size_t e) { covered += e - b; });
  CHECK(covered.load() == 20 * 16);
  CHECK(s->stats().parallel_fors_inline >= (sched_test::tsan ? 1u : 2u));
}

TEST_CASE("map dispatch: many chunks use every worker and finished workers steal the rest",
          "[sched3][scheduler][tsan]") {
  const std::string p = GENERATE("steal", "deal");
  INFO("policy " << p);
  auto s = four_workers(p);
  const std::size_t n = sched_test::scaled(4096, 512);
  std::vector<std::atomic<std::uint8_t>> hit(n);
  s->reset_stats();
  // The first quarter's owner waits in its blocks until another worker has
  // stolen one of them: the others finish their segments and steal its halves
  // (certain, not a race with the OS scheduler on a loaded machine).
  sched_test::steal_witness witness(4, n / 4);  // the caller probes [0, 4)
  s->parallel_for(n, 4, [&](std::size_t b, std::size_t e) {
    witness.block(b);
    for (std::size_t i = b; i < e; ++i) {
      hit[i]++;
      spin_us(1);
    }
  });
  CHECK(witness.stolen());
  bool once = true;
  for (auto& h : hit) once &= h.load() == 1;
  CHECK(once);
  auto st = s->stats();
  std::uint64_t steals = 0;
  for (const auto& w : st.workers) steals += w.steals;
  // Wakes do not follow the block count (n / 4 blocks): the dispatch wakes
  // each worker once, and a worker that parks between steals (a loaded or
  // TSan-slowed machine) may be woken again by a half pushed to a deque.
  CHECK(st.wakeups <= 4 * 4);
  CHECK(steals > 0);
}
