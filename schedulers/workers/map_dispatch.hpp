#pragma once
// Map dispatch: how steal and deal start, split, run and wait for a
// parallel_for.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/fence.hpp>
#include <sinew/detail/futex.hpp>

#include "loop_ctx.hpp"
#include "worker_counters.hpp"

namespace sinew::detail::workers {

// After MOCL's push-based work-group dispatch [Zhang18, §3.3]: a
// parallel_for's chunk count is known at its start, so its chunks are split
// into one contiguous segment per participant and pushed in one step, and
// only as many sleeping workers as there are segments besides the caller's
// are woken, with one system call. Segments are split in halves while longer
// than the grain as they run, so workers that finish early steal what is
// left. A loop whose chunks together cost less than waking a worker runs
// inline: the caller times its first chunk when there are many (so that the
// delay it adds to the dispatch is a small part of the loop), and runs the
// rest itself when all of them would take less than `inline_ns`.
//
//   std::size_t b;
//   if (!begin_loop(sc, L, n, workers, w, node, b)) {
//     parts = std::min(chunk_count(n - b, grain), workers);
//     // push segment i = [segment_begin(b, n, parts, i), segment_begin(b, n, parts, i + 1))
//   }
inline constexpr std::uint64_t inline_ns = 10'000;  // about a futex wake-up and a steal
inline constexpr std::size_t probe_factor = 4;      // probe when chunks >= 4 x workers

// Chunks of a loop of n elements with this grain.
inline std::size_t chunk_count(std::size_t n, std::size_t grain) noexcept {
  return n / grain + (n % grain != 0);
}

// Start of segment i of [b, e) split evenly in `parts` (even splits keep
// every block at least grain/2 long once segments are halved to the grain).
inline std::size_t segment_begin(std::size_t b, std::size_t e, std::size_t parts, std::size_t i) noexcept {
  return b + (e - b) * i / parts;
}

// Runs a block task of a parallel_for on worker w: gives away right halves
// onto w's deque while longer than the grain, runs the leftmost part, then
// keeps taking the next block of the same loop from the bottom of its own
// deque (the half it pushed last) and runs it the same way. The elements
// done are counted on the loop once, at the end: one `remaining` update per
// run of blocks instead of one per block, so that workers running short
// blocks do not all contend on that counter. Returns true when this run
// finished the loop (the caller announces it; nothing may touch the
// loop_ctx after that). `make_half(L, mid, e)` returns a task for
// [mid, e); `recycle(t)` gives a task back to the cache.
template <class Worker, class Task, class MakeHalf, class Recycle>
bool run_blocks(Worker& w, Task* t, MakeHalf&& make_half, Recycle&& recycle) noexcept {
  loop_ctx* L = t->loop;
  std::size_t b = t->b, e = t->e, done = 0;
  recycle(t);
  for (;;) {
    while (e - b > L->grain) {
      const std::size_t mid = b + (e - b) / 2;
      w.dq.push(make_half(L, mid, e));
      e = mid;
    }
    w.count_block(*L, b, e, w.node);
    L->run_body(b, e);
    done += e - b;
    Task* n = nullptr;
    if (!w.dq.pop(n)) break;
    if (n->loop != L) {  // another loop's block or a function: leave it where it was
      w.dq.push(n);
      break;
    }
    b = n->b;
    e = n->e;
    recycle(n);
    Worker::add(w.tasks, 1);  // every block counts as a task
  }
  return L->finish(done);
}

// The inline test for a loop over `workers` workers: true when the caller
// should run it all itself. May run the first chunk (timed); `b` is then
// set past it.
inline bool dispatch_inline(loop_ctx& L, std::size_t n, std::size_t workers, std::size_t& b) noexcept {
  const std::size_t chunks = chunk_count(n, L.grain);
  b = 0;
  if (chunks == 1) return true;
  if (chunks < probe_factor * workers) return false;
  const std::uint64_t t0 = now_ns();
  L.run_leaf(0, L.grain);
  b = L.grain;
  return (now_ns() - t0) * (chunks - 1) < inline_ns;
}

// An outside thread waits for the loop it injected: a few looks, then it
// sleeps on `epoch` (announced by the loop's last finisher when `waiters`
// is non-zero). It does not watch the loop longer: the caller is not
// pinned, and would take turns with the pinned worker of its core.
//
//   workers::wait_outside(L, ext_waiters, ext_epoch);
inline void wait_outside(const loop_ctx& L, std::atomic<std::uint32_t>& waiters,
                         std::atomic<std::uint32_t>& epoch) noexcept {
  for (unsigned i = 0; i < 64 && L.remaining.load(std::memory_order_acquire) != 0; ++i) cpu_relax();
  while (L.remaining.load(std::memory_order_acquire) != 0) {
    waiters.fetch_add(1, std::memory_order_seq_cst);
    seq_cst_fence();
    const std::uint32_t e = epoch.load(std::memory_order_seq_cst);
    if (L.remaining.load(std::memory_order_seq_cst) != 0) futex_wait(epoch, e);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
  }
}

// Whether a loop with an affinity gets the static segment-to-worker
// assignment (segment i to worker i, so successive loops of one length give
// every worker the same elements, which its core's cache may still hold, as
// OpenMP's static schedule does). That pays while few such loops run at once
// (a pipeline of maps: each worker holds a segment of each); once more than
// half as many loops as workers run (maps in farms), loops place their
// segments as without an affinity, starting after the caller, so that
// concurrent loops do not all give their first segment to worker 0. The
// count is a heuristic: relaxed.
//
//   workers::affine_gate::claim aff(p.affine, hint.affinity && parts == threads, threads);
//   if (aff.held()) { /* segment i to worker i */ }
class affine_gate {
 public:
  class claim {
   public:
    claim(affine_gate& g, bool wanted, std::size_t workers) noexcept : g_(wanted ? &g : nullptr) {
      if (g_) held_ = g_->loops_.fetch_add(1, std::memory_order_relaxed) < std::max<std::size_t>(1, workers / 2);
    }
    claim(const claim&) = delete;
    claim& operator=(const claim&) = delete;
    ~claim() {
      if (g_) g_->loops_.fetch_sub(1, std::memory_order_relaxed);
    }
    bool held() const noexcept { return held_; }

   private:
    affine_gate* g_;
    bool held_ = false;
  };

 private:
  alignas(64) std::atomic<std::size_t> loops_{0};  // loops with an affinity running
};

// The start of parallel_for in both policies: counts it and decides
// whether the caller runs the loop alone (the inline test over `workers`
// workers); if so runs it, counting one task for a calling worker `w`
// (null: an outside thread) on `node`, and returns true.
// Otherwise `b` is where the loop's segments start.
template <class Worker>
bool begin_loop(scheduler_counters& sc, loop_ctx& L, std::size_t n, std::size_t workers, Worker* w, int node,
                std::size_t& b, bool allow_inline = true) noexcept {
  sc.pfors.fetch_add(1, std::memory_order_relaxed);
  b = 0;
  if (!allow_inline) return false;
  if (!dispatch_inline(L, n, workers, b)) {
    if (w && b) w->count_block(L, 0, b, node);  // the probed first chunk
    return false;
  }
  L.run_inline(b, n);
  sc.pfors_inline.fetch_add(1, std::memory_order_relaxed);
  if (w) {
    Worker::add(w->tasks, 1);
    w->count_block(L, 0, n, node);
  }
  return true;
}

}  // namespace sinew::detail::workers
