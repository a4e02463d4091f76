// workers::loop_linger: whom a loop's end keeps awake, and what ends a
// worker's spin (a loop's start, poke(), starved(), the deadline, stop()).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <thread>

#include "../schedulers/workers/loop_linger.hpp"

using sinew::detail::workers::loop_linger;
using sinew::detail::workers::ticks;

namespace {
// ticks_per_us() needs 5 ms of the process behind it.
std::uint64_t tpu() {
  while (loop_linger::ticks_per_us() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return loop_linger::ticks_per_us();
}
// Loops of 10 ticks, the idle gaps between them `gaps_us`: the last one's
// end is the returned plan (the earlier ones' claims are given back).
loop_linger::plan loops_apart(loop_linger& L, std::initializer_list<std::uint64_t> gaps_us, unsigned awake) {
  std::uint64_t t = ticks();
  L.loop_starts(t);
  for (const std::uint64_t g : gaps_us) {
    L.unclaim(L.loop_ends(t += 10, awake).workers);
    L.loop_starts(t += g * tpu());
  }
  return L.loop_ends(t + 10, awake);
}
loop_linger::plan two_loops(loop_linger& L, std::uint64_t gap_us, unsigned awake) { return loops_apart(L, {gap_us}, awake); }
// A plan of one worker whose deadline is far enough (a minute) that only
// the event under test ends its spin.
loop_linger::plan long_plan(loop_linger& L) {
  loop_linger::plan p = two_loops(L, loop_linger::max_ns / 1000 - 100, 1);
  REQUIRE(p.workers == 1);
  L.keep_until(p.until = ticks() + 60'000'000 * tpu());
  return p;
}
// Runs a long plan's linger() on a thread, calls `end` once it has spun
// 2 ms, and checks that the spin then ended and gave its claim back.
template <class End, class Starved>
void spin_until(loop_linger& L, End&& end, Starved&& starved) {
  (void)long_plan(L);
  std::atomic<bool> done{false};
  std::thread w([&] {
    L.linger(starved);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const bool early = done.load();
  end();
  w.join();
  REQUIRE_FALSE(early);
  CHECK(L.outstanding() == 0);
}
}  // namespace

TEST_CASE("loop_linger keeps workers awake only between loops that come at unit rate", "[scheduler][linger]") {
  tpu();
  SECTION("no plan before a gap was measured") {
    loop_linger L;
    L.loop_starts(ticks());
    CHECK(L.loop_ends(ticks(), 4).workers == 0);
  }
  SECTION("a short gap: awake workers until about twice the gap") {
    loop_linger L;
    const loop_linger::plan p = two_loops(L, 300, 4);
    CHECK(p.workers == 4);
    CHECK(L.outstanding() == 4);
    CHECK(p.until > ticks());
    // A second plan while those are out adds nobody.
    L.loop_starts(ticks());
    CHECK(L.loop_ends(ticks(), 4).workers == 0);
    // Claims given back unspent (their tasks could not be queued) free them for the next plan.
    L.unclaim(3);
    CHECK(L.outstanding() == 1);
    L.loop_starts(ticks());
    CHECK(L.loop_ends(ticks(), 4).workers == 3);
  }
  SECTION("gaps longer than max_ns keep nobody awake") {
    loop_linger L;
    CHECK(two_loops(L, loop_linger::max_ns / 1000 + 100, 4).workers == 0);
  }
  SECTION("one long pause in a stream at unit rate: the next short gap lingers again") {
    loop_linger a, b;
    CHECK(loops_apart(a, {300, 300, 100'000}, 4).workers == 0);
    CHECK(loops_apart(b, {300, 300, 100'000, 300}, 4).workers == 4);
  }
  SECTION("gaps that grow past max_ns end the lingering within a few loops") {
    loop_linger a, b;
    const std::uint64_t g = loop_linger::max_ns / 1000 * 5 / 4;  // a quarter longer than max_ns
    CHECK(loops_apart(a, {300, g}, 4).workers == 4);  // the estimate moves a quarter of the way to g
    CHECK(loops_apart(b, {300, g, g, g, g, g, g}, 4).workers == 0);
  }
  SECTION("nobody while another loop still runs") {
    loop_linger L;
    (void)two_loops(L, 100, 0);
    L.loop_starts(ticks());
    L.loop_starts(ticks());
    CHECK(L.loop_ends(ticks(), 4).workers == 0);  // one loop is left running
  }
}

TEST_CASE("loop_linger's spin ends on a loop, a poke, starvation, stop and the deadline",
          "[scheduler][linger][tsan]") {
  tpu();
  const auto never = [] { return false; };
  loop_linger L;
  SECTION("a loop starts") { spin_until(L, [&] { L.loop_starts(ticks()); }, never); }
  SECTION("a task queued from outside") { spin_until(L, [&] { L.poke(); }, never); }
  SECTION("work waits with no taker") {
    std::atomic<bool> stuck{false};
    spin_until(L, [&] { stuck = true; }, [&] { return stuck.load(); });
  }
  SECTION("stop") {
    spin_until(L, [&] { L.stop(); }, never);
    L.loop_starts(ticks());
    CHECK(L.loop_ends(ticks(), 4).workers == 0);  // stopped: no more plans
  }
  SECTION("the deadline") {
    (void)long_plan(L);
    L.keep_until(ticks() + 20'000 * tpu());  // 20 ms
    const auto t0 = std::chrono::steady_clock::now();
    L.linger(never);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    CHECK(ms >= 19.0);
    CHECK(L.outstanding() == 0);
  }
}

TEST_CASE("loop_linger's lingering workers run an open loop in place and go on spinning after it",
          "[scheduler][linger][tsan]") {
  tpu();
  const auto never = [] { return false; };
  SECTION("open() needs lingering workers and no other loop") {
    loop_linger L;
    loop_linger::team_loop t{[](void*) noexcept {}, nullptr};
    CHECK_FALSE(L.open(&t));  // nobody lingers
    (void)long_plan(L);       // one worker planned
    L.loop_starts(ticks());
    CHECK_FALSE(L.open(&t));  // a loop runs
    L.unclaim(L.loop_ends(ticks(), 1).workers);
    CHECK(L.open(&t));
    loop_linger::team_loop u{[](void*) noexcept {}, nullptr};
    CHECK_FALSE(L.open(&u));  // one open loop at a time
    L.loop_starts(ticks());
    L.unclaim(L.loop_ends(ticks(), 1, &t).workers);
    L.unclaim(1);
  }
  SECTION("two workers run every block of three loops; the owner runs none") {
    loop_linger L;
    const loop_linger::plan p = two_loops(L, loop_linger::max_ns / 1000 - 100, 2);
    REQUIRE(p.workers == 2);
    L.keep_until(ticks() + 60'000'000 * tpu());
    std::thread w1([&] { L.linger(never); }), w2([&] { L.linger(never); });
    struct blocks {
      std::atomic<int> next{0}, done{0};
      int ran[64] = {};
      static void run(void* self) noexcept {
        auto& b = *static_cast<blocks*>(self);
        for (int i; (i = b.next.fetch_add(1)) < 64;) {
          ++b.ran[i];
          b.done.fetch_add(1, std::memory_order_release);
        }
      }
    };
    for (int loop = 0; loop < 3; ++loop) {
      blocks b;
      loop_linger::team_loop t{&blocks::run, &b};
      REQUIRE(L.open(&t));
      L.loop_starts(ticks());
      while (b.done.load(std::memory_order_acquire) < 64) std::this_thread::yield();
      // An end a minute ahead: the plan's deadline cannot pass during the test.
      L.unclaim(L.loop_ends(ticks() + 60'000'000 * tpu(), 2, &t).workers);
      CHECK(L.inside() == 0);  // nobody is left in b, which goes away here
      for (int i = 0; i < 64; ++i) CHECK(b.ran[i] == 1);
      CHECK(L.outstanding() == 2);  // still spinning, for the next loop
    }
    L.stop();
    w1.join();
    w2.join();
    CHECK(L.outstanding() == 0);
  }
}
