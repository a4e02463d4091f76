#pragma once
// One shard of a sharded task queue (steal's injection queue, deal's node
// queues), with the spin lock that guards it.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>

#include <sched.h>

#include <sinew/detail/futex.hpp>

namespace sinew::detail::workers {

// A lock for the short critical sections of the task queues (a deque push
// or pop). Workers only try it: one that finds it taken looks elsewhere
// rather than queue behind the holder, so polling workers never convoy a
// submitter. Submitters spin, then yield (the holder may have been
// preempted on an oversubscribed core).
class spin_lock {
 public:
  bool try_lock() noexcept {
    return !f_.load(std::memory_order_relaxed) && !f_.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    for (unsigned i = 0; !try_lock(); ++i) {
      if (i < 64) {
        cpu_relax();
      } else {
        sched_yield();
      }
    }
  }
  void unlock() noexcept { f_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> f_{false};
};

// A locked FIFO with its size mirrored for lock-free looks, so that a thread
// pushing a burst over several shards meets at most one worker on each lock
// and an empty shard is seen without taking it. Takers only try the lock.
//
//   task_shard<task> sh;
//   sh.push(t);                                   // a submitter
//   bool contended = false;
//   task* x = sh.try_take(&w.dq, contended);      // a worker: oldest + a share
template <class T>
struct alignas(64) task_shard {
  spin_lock m;
  std::deque<T*> q;  // push_back, take from the front
  alignas(64) std::atomic<std::size_t> size{0};

  void push(T* t) noexcept {
    m.lock();
    q.push_back(t);
    size.store(q.size(), std::memory_order_relaxed);
    m.unlock();
  }
  // The oldest task, and with `share` half the rest (at most 31) onto that
  // deque, where other workers may steal them: one lock for many tasks.
  // Null when the shard is empty, or its lock is taken (then `contended`).
  template <class Deque>
  T* try_take(Deque* share, bool& contended) noexcept {
    return take_locked(contended, [&] {
      T* t = q.front();
      q.pop_front();
      if (share)
        for (std::size_t k = std::min<std::size_t>(q.size() / 2, 31); k > 0; --k) {
          share->push(q.front());
          q.pop_front();
        }
      return t;
    });
  }
  // The newest task (a worker's own latest push), or null: what a waiter
  // whose stack is deep may run (workers::max_help_depth).
  T* try_take_newest(bool& contended) noexcept {
    return take_locked(contended, [&] {
      T* t = q.back();
      q.pop_back();
      return t;
    });
  }
  // `take()` under the lock when the shard is not empty; only tries the lock.
  template <class Take>
  T* take_locked(bool& contended, Take take) noexcept {
    if (size.load(std::memory_order_relaxed) == 0) return nullptr;
    if (!m.try_lock()) {
      contended = true;
      return nullptr;
    }
    T* t = q.empty() ? nullptr : take();
    size.store(q.size(), std::memory_order_relaxed);
    m.unlock();
    return t;
  }
  ~task_shard() {
    // Only a submit racing with its scheduler's destructor (undefined) can
    // leave tasks here.
    for (T* t : q) delete t;
  }
};

}  // namespace sinew::detail::workers
