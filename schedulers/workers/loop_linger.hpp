#pragma once
// Keeps idle workers awake across the short gaps of a stream of parallel
// loops, as OpenMP's threads spin after a parallel region: a worker woken
// from sleep for each loop costs tens of µs, as much as a loop of a
// cache-sized unit takes. When loops come at unit rate (the idle gap
// between one loop's end and the next one's start stays under `max_ns`),
// a loop's end keeps up to `awake_max` workers spinning for about that gap
// (doubled, at most `max_ns`; the estimate takes a shorter gap at once
// and moves a quarter of the way to a longer one). A loop that starts
// while none runs is opened to them (open()): they run its blocks in
// place, as an OpenMP team takes a region without a task hand-off, and
// go on spinning after it. The deadline, stop(), a task queued from
// outside the arena (poke()), a loop that is not open to them, or work
// waiting with no taker (`starved`, the policy's own test) sends them
// back to the pool. Gaps longer than `max_ns` keep nobody awake: no core
// burns between loops that come rarely.
//
//   loop_linger L;                                 // one per arena
//   loop_linger::team_loop t{run, ctx};            // run(ctx): claims blocks until none is left
//   const bool opened = L.open(&t);
//   L.loop_starts(ticks());  run the loop;
//   if (auto p = L.loop_ends(ticks(), n - 2, opened ? &t : nullptr); p.workers)
//     for (i < p.workers) enqueue([&] { L.linger(starved); });
//   L.poke();                                      // after enqueueing from outside
//   ...  L.stop(); while (L.outstanding()) yield();  // before L goes away
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include "tick_clock.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sinew::detail::workers {

class loop_linger {
 public:
  // The longest gap kept awake: as OpenMP's threads, across milliseconds of
  // the caller's own work between loops.
  static constexpr std::uint64_t max_ns = 10'000'000;

  struct plan {
    unsigned workers = 0;     // to keep awake more (0: none)
    std::uint64_t until = 0;  // ticks: when every lingering worker goes back
  };

  // A loop that lingering workers run in place: run(ctx) claims its blocks
  // until none is left (a body's exception is run's to keep).
  struct team_loop {
    void (*run)(void* ctx) noexcept;
    void* ctx;
  };

  // Before loop_starts: offers `t` to the lingering workers when some
  // linger and no other loop runs or is open. True: pass `t` to loop_ends,
  // which waits for the workers inside it before `t` may go away.
  bool open(team_loop* t) noexcept {
    if (outstanding_.load(std::memory_order_relaxed) == 0 || loops_.load(std::memory_order_relaxed) != 0) return false;
    team_loop* none = nullptr;
    // release: a worker that reads `t` sees the loop's state as the owner wrote it.
    if (!open_.compare_exchange_strong(none, t, std::memory_order_release, std::memory_order_relaxed)) return false;
    opens_.fetch_add(1, std::memory_order_release);
    return true;
  }

  // A loop starts: lingering workers run it in place when it was opened,
  // else go back to the pool to take its blocks. The gap since the last
  // loop's end is measured only when no loop was running (an arena that
  // was idle).
  void loop_starts(std::uint64_t now) noexcept {
    // acq_rel: the lingerers' load of loops_ sees it at once (no store to
    // order after it); the gap is this thread's reading of last_end_.
    if (loops_.fetch_add(1, std::memory_order_acq_rel) != 0) return;
    const std::uint64_t end = last_end_.load(std::memory_order_relaxed);
    if (end == 0 || end > now) return;
    // A shorter gap counts at once, a longer one by a quarter: after one
    // pause (a stream's first unit, a burst's end) one short gap is enough to linger again.
    const std::uint64_t g = now - end, old = gap_.load(std::memory_order_relaxed);
    gap_.store(old == 0 || g < old ? g : (3 * old + g) / 4, std::memory_order_relaxed);
  }

  // A loop ends: whom to keep awake. Nobody while another loop runs (its
  // blocks need the idle workers), before a gap was measured, or when the
  // gaps are longer than max_ns.
  // `opened`: the loop open() accepted; the workers inside it are waited
  // for here. Workers already lingering go on until the plan's deadline.
  plan loop_ends(std::uint64_t now, unsigned awake_max, team_loop* opened = nullptr) noexcept {
    const bool last = loops_.fetch_sub(1, std::memory_order_acq_rel) == 1;
    if (opened) {  // after the count: a worker that sees neither the loop nor the count goes on spinning
      // seq_cst with join(): a worker either counts itself in before this
      // store and is waited for, or finds the loop closed.
      open_.store(nullptr, std::memory_order_seq_cst);
      while (inside_.load(std::memory_order_seq_cst) != 0) pause();
    }
    if (!last) return {};
    last_end_.store(now, std::memory_order_relaxed);
    const std::uint64_t tpu = ticks_per_us(), g = gap_.load(std::memory_order_relaxed);
    if (tpu == 0 || g == 0 || g > max_ns / 1000 * tpu || stop_.load(std::memory_order_relaxed)) {
      until_.store(0, std::memory_order_relaxed);  // the lingering workers go back at once
      return {};
    }
    const std::uint64_t until = now + std::min(2 * g, max_ns / 1000 * tpu);
    until_.store(until, std::memory_order_relaxed);
    // Claimed here, so that loop ends racing each other keep at most
    // awake_max workers in all; linger() gives its claim back.
    unsigned have = outstanding_.load(std::memory_order_relaxed), more;
    do {
      if (awake_max <= have) return {0, until};
      more = awake_max - have;
    } while (!outstanding_.compare_exchange_weak(have, have + more, std::memory_order_relaxed));
    return {more, until};
  }

  // A task was queued from outside the arena: lingering workers go back
  // to the pool to take it. One load when nobody lingers.
  void poke() noexcept {
    if (outstanding_.load(std::memory_order_relaxed) != 0) kicks_.fetch_add(1, std::memory_order_release);
  }

  // Spins on the calling worker, one of a plan's `workers`, running the
  // blocks of every loop opened meanwhile, until the latest plan's
  // deadline, a loop that is not open, a poke(), stop(), or starved() is
  // true (checked about every 10 µs).
  template <class Starved>
  void linger(Starved&& starved) noexcept {
    const std::uint64_t check = 10 * ticks_per_us();
    std::uint64_t next = ticks() + check, joined = 0;
    const std::uint32_t kicks = kicks_.load(std::memory_order_relaxed);
    while (!stop_.load(std::memory_order_relaxed) && kicks_.load(std::memory_order_acquire) == kicks) {
      if (const std::uint64_t o = opens_.load(std::memory_order_acquire); o != joined) {
        joined = o;
        join();
        next = ticks() + check;
        continue;
      }
      // The open loop first (acquire): a worker that sees it closed also
      // sees its end counted, so only a loop not open to it counts here.
      const bool one_open = open_.load(std::memory_order_acquire) != nullptr;
      if (loops_.load(std::memory_order_acquire) > (one_open ? 1u : 0u)) break;
      const std::uint64_t t = ticks();
      if (t >= until_.load(std::memory_order_relaxed)) break;
      if (t >= next) {
        if (starved()) break;
        next = t + check;
        std::this_thread::yield();  // gives the core to a runnable thread of another process
      }
      pause();
    }
    // release: the owner's wait in outstanding() sees every access of this call done.
    outstanding_.fetch_sub(1, std::memory_order_release);
  }

  // Moves the lingering workers' deadline (ticks): loop_ends() sets it
  // from the gaps, a test to what it measures.
  void keep_until(std::uint64_t until) noexcept { until_.store(until, std::memory_order_relaxed); }

  // Gives back `n` workers of a plan that will not linger (their task
  // could not be queued), as their linger() would.
  void unclaim(unsigned n) noexcept { outstanding_.fetch_sub(n, std::memory_order_release); }
  void stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
  // Workers planned and not yet through linger(): queued or spinning.
  unsigned outstanding() const noexcept { return outstanding_.load(std::memory_order_acquire); }
  // Workers inside an open loop's run() (for tests).
  unsigned inside() const noexcept { return inside_.load(std::memory_order_acquire); }

  // Ticks per µs, once the process has run 5 ms to measure it against
  // steady_clock (0 before: nobody lingers).
  static std::uint64_t ticks_per_us() noexcept {
    static std::atomic<std::uint64_t> tpu{0};
    std::uint64_t v = tpu.load(std::memory_order_relaxed);
    if (v) return v;
    const tick_rate r = tick_rate::now();
    if (r.dt == 0) v = 1000;  // ticks are ns
    else if (r.dn >= 5'000'000) v = std::max<std::uint64_t>(1, r.dt * 1000 / r.dn);
    else return 0;
    tpu.store(v, std::memory_order_relaxed);
    return v;
  }

 private:
  static void pause() noexcept {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
  // Runs the open loop's blocks, if it is still open. seq_cst with
  // loop_ends(): counted in before the owner's check of inside_, or the
  // owner's close is seen here.
  void join() noexcept {
    inside_.fetch_add(1, std::memory_order_seq_cst);
    if (team_loop* t = open_.load(std::memory_order_seq_cst)) t->run(t->ctx);
    inside_.fetch_sub(1, std::memory_order_release);  // release: the owner's wait sees the blocks' writes
  }

  // Read by every lingerer on each spin: written once or twice a loop.
  alignas(64) std::atomic<std::uint32_t> loops_{0};  // loops running
  std::atomic<std::uint32_t> kicks_{0};              // poke()s
  std::atomic<bool> stop_{false};
  std::atomic<team_loop*> open_{nullptr};       // the loop lingerers run in place
  std::atomic<std::uint64_t> opens_{0};         // open()s: a new value is a loop to join
  std::atomic<std::uint64_t> until_{0};         // ticks: the latest plan's deadline
  alignas(64) std::atomic<std::uint32_t> inside_{0};  // lingerers in the open loop's run()
  alignas(64) std::atomic<std::uint32_t> outstanding_{0};
  std::atomic<std::uint64_t> last_end_{0}, gap_{0};  // ticks
};

}  // namespace sinew::detail::workers
