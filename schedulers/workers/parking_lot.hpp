#pragma once
// The idle workers of one scheduler (steal) or one NUMA node (deal): who is
// searching for work, who is parked, and who a push wakes.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include <sinew/detail/fence.hpp>
#include <sinew/detail/futex.hpp>

namespace sinew::detail::workers {

// After the Go runtime's scheduler (proc.go: "spinning" Ms, wakep,
// resetspinning) and oneTBB's private server (a semaphore per thread): a
// worker that runs out of work *searches* for a while (counted in
// `nsearching`), then *parks* on its own futex word, listed in `idle`. A
// push wakes a worker only when no one is searching, and the woken worker is
// counted as a searcher by its waker before it runs. So a burst of submits
// costs one system call, not one per task, and a dispatch of m chunks wakes
// exactly the workers it needs.
//
// Invariant: nsearching = workers with `searching` set + workers popped from
// `idle` that have not run yet (they set `searching` when they do).
//
// No lost wake-ups. A pusher: P1 push; P2 seq_cst fence; P3 read nidle and
// nsearching (seq_cst); wake one worker unless nidle == 0 or nsearching > 0.
//  * It skipped because nsearching > 0: a counted worker exists, and every
//    counted worker eventually decrements nsearching. The decrement that
//    brings it to 0 comes after P3 in nsearching's modification order, hence
//    after P2 in the seq_cst order; the worker that makes it fences and looks
//    at every queue (stop_searching's caller when it found work, the park
//    re-check below when it did not), so it sees P1's task: it runs it, or
//    wakes a worker for it. While nsearching never returns to 0, searchers
//    keep looking at every queue.
//  * It skipped because nidle == 0: a worker that parks later registers
//    (nidle store, seq_cst), fences and looks at every queue once more
//    before it sleeps (Dekker with P2/P3), so it sees P1's task.
//  * It woke a worker: that worker is counted and searches.
// A worker pushing onto its own deque that already held tasks skips P2/P3:
// the push that made the deque non-empty did them, and the searcher that
// takes a task from it wakes the next one while more is visible. If a thief
// emptied the deque unseen, the new task waits for its owner, which runs its
// own deque next: a task is never stranded, though it may not run in parallel.
// Parking: prepare_park (leave searching, register in `idle`), fence,
// re-check every queue; found something or stopping: cancel_park (a waker
// may have popped it meanwhile: then it is counted, and searches); else
// park() sleeps until a waker pops it (word = 1, set under the lock so that
// a late store cannot outlive the next registration).
//
//   lot.start_searching(p);               // find_work failed
//   if (t) { if (lot.stop_searching(p) && visible()) lot.wake_one(); run(t); }
//   lot.prepare_park(p); seq_cst_fence(); t = find_work();
//   if (t || stopping) lot.cancel_park(p); else lot.park(p);
class parking_lot {
 public:
  struct alignas(64) parker {
    std::atomic<std::uint32_t> word{0};  // 1: popped by a waker (counted as a searcher)
    bool listed = false;                 // in `idle` (guarded by the lot's mutex)
    bool searching = false;              // owner only: counted in nsearching
  };

  std::uint32_t searching() const noexcept { return nsearching_.load(std::memory_order_seq_cst); }
  std::uint32_t idle() const noexcept { return nidle_.load(std::memory_order_seq_cst); }

  // P3..: after a push and a seq_cst fence, wakes one parked worker unless
  // someone is searching. Returns the number woken (0 or 1).
  int wake_one() noexcept {
    if (nidle_.load(std::memory_order_seq_cst) == 0) return 0;
    if (nsearching_.load(std::memory_order_seq_cst) != 0) return 0;
    return wake_upto(1);
  }

  // After pushing m tasks at once (map dispatch): wakes up to m parked
  // workers, less the ones already searching. Returns the number woken.
  int wake_n(std::size_t m) noexcept {
    if (nidle_.load(std::memory_order_seq_cst) == 0) return 0;
    return wake_upto(m);
  }

  // Every parked worker (shutdown). Each is counted as a searcher.
  void wake_all() noexcept {
    std::vector<parker*> woken;
    {
      std::lock_guard<std::mutex> lk(m_);
      woken.swap(idle_);
      for (parker* p : woken) pop_locked(*p);
      nidle_.store(0, std::memory_order_seq_cst);
    }
    for (parker* p : woken) futex_wake(p->word, 1);
  }

  // The owner found no work: it now searches (counted).
  void start_searching(parker& p) noexcept {
    if (p.searching) return;
    p.searching = true;
    nsearching_.fetch_add(1, std::memory_order_seq_cst);
  }

  // The owner found work while searching. True when it was the last
  // searcher: the caller then looks whether more work is visible and, if
  // so, calls wake_one() (the fence comes first, here).
  bool stop_searching(parker& p) noexcept {
    if (!p.searching) return false;
    p.searching = false;
    const bool last = nsearching_.fetch_sub(1, std::memory_order_seq_cst) == 1;
    if (last) seq_cst_fence();
    return last;
  }

  // Leaves searching and registers as idle; the caller then fences and
  // looks at every queue once more, then calls cancel_park or park.
  void prepare_park(parker& p) noexcept {
    if (p.searching) {
      p.searching = false;
      nsearching_.fetch_sub(1, std::memory_order_seq_cst);
    }
    std::lock_guard<std::mutex> lk(m_);
    p.word.store(0, std::memory_order_relaxed);
    p.listed = true;
    idle_.push_back(&p);
    nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
  }

  // The re-check found work (or the scheduler stops): leave the idle list.
  // Returns true when a waker had popped the owner already (it is then
  // counted as a searcher: `searching` is set).
  bool cancel_park(parker& p) noexcept {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (p.listed) {
        idle_.erase(std::find(idle_.begin(), idle_.end(), &p));
        p.listed = false;
        nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
        return false;
      }
    }
    p.searching = true;
    return true;
  }

  // Sleeps until a waker pops the owner; it is then a counted searcher.
  void park(parker& p) noexcept {
    while (p.word.load(std::memory_order_acquire) == 0) futex_wait(p.word, 0);
    p.searching = true;
  }

 private:
  void pop_locked(parker& p) noexcept {
    p.listed = false;
    p.word.store(1, std::memory_order_release);
    nsearching_.fetch_add(1, std::memory_order_seq_cst);
  }

  int wake_upto(std::size_t m) noexcept {
    parker* woken[64];
    std::size_t k = 0;
    {
      std::lock_guard<std::mutex> lk(m_);
      const std::size_t s = nsearching_.load(std::memory_order_seq_cst);
      if (s >= m) return 0;
      k = std::min({m - s, idle_.size(), std::size_t(64)});
      for (std::size_t i = 0; i < k; ++i) {
        woken[i] = idle_.back();
        idle_.pop_back();
        pop_locked(*woken[i]);
      }
      nidle_.store(std::uint32_t(idle_.size()), std::memory_order_seq_cst);
    }
    for (std::size_t i = 0; i < k; ++i) futex_wake(woken[i]->word, 1);
    return int(k);
  }

  std::mutex m_;
  std::vector<parker*> idle_;
  alignas(64) std::atomic<std::uint32_t> nidle_{0};
  alignas(64) std::atomic<std::uint32_t> nsearching_{0};
};

// A worker's push of `t` onto its own deque `dq`: true when the caller must
// announce it (P2/P3 of parking_lot's protocol), that is when the deque held
// no task before (see "A worker pushing onto its own deque" there).
//
//   if (workers::push_own(w.dq, t)) announce_work();
template <class Deque, class T>
bool push_own(Deque& dq, T t) {
  const bool was_empty = dq.empty_approx();
  dq.push(t);
  return was_empty;
}

}  // namespace sinew::detail::workers
