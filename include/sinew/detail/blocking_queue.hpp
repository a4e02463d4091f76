#pragma once
// Blocking push/pop and end of stream over a lock-free ring. Waiting threads
// sleep in std::atomic::wait (a futex on Linux): nothing spins indefinitely.
// Wake-ups are sent only when a waiter is registered, so the uncontended path
// costs one extra fence and load per operation.
#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include <sinew/detail/ring.hpp>

namespace sinew::detail {

template <class Ring, class T>
class blocking_queue {
 public:
  // The ring is twice the capacity so a push that passed the size check
  // finds its cell free unless a popper stalls between its two steps.
  explicit blocking_queue(std::size_t capacity)
      : ring_(2 * (capacity ? capacity : 1)), capacity_(capacity ? capacity : 1) {}

  /// Capacity as requested (the ring may round up; pushes stop at this bound).
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size_approx() const noexcept { return ring_.size_approx(); }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  /// Adds `v` unless the queue is full or closed.
  bool try_push(T v) { return try_push_ref(v); }

  /// Adds `v`, sleeping while the queue is full (back pressure). Returns
  /// false (and drops nothing it was given: `v` is unchanged) once closed.
  bool push(T v) {
    for (;;) {
      if (closed()) return false;
      if (try_push_ref(v)) return true;
      push_waiters_.fetch_add(1, std::memory_order_seq_cst);
      std::uint32_t e = space_epoch_.load(std::memory_order_seq_cst);
      bool ok = !closed() && try_push_ref(v);
      if (!ok && !closed()) space_epoch_.wait(e, std::memory_order_seq_cst);
      push_waiters_.fetch_sub(1, std::memory_order_seq_cst);
      if (ok) return true;
    }
  }

  bool try_pop(T& out) {
    if (!ring_.try_pop(out)) return false;
    size_.fetch_sub(1, std::memory_order_seq_cst);
    if (push_waiters_.load(std::memory_order_seq_cst) > 0) wake(space_epoch_);
    return true;
  }

  /// Takes the oldest element, sleeping while empty. Returns false when the
  /// queue is closed and drained (end of stream).
  bool pop(T& out) {
    for (;;) {
      if (try_pop(out)) return true;
      if (closed()) return try_pop(out);
      pop_waiters_.fetch_add(1, std::memory_order_seq_cst);
      std::uint32_t e = data_epoch_.load(std::memory_order_seq_cst);
      bool ok = try_pop(out);
      if (!ok && !closed()) data_epoch_.wait(e, std::memory_order_seq_cst);
      pop_waiters_.fetch_sub(1, std::memory_order_seq_cst);
      if (ok) return true;
    }
  }

  /// Ends the stream: pushes fail from now on, pops drain what is left and
  /// then return false. Wakes every sleeper.
  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    wake(data_epoch_);
    wake(space_epoch_);
  }

 private:
  bool try_push_ref(T& v) {
    if (closed()) return false;
    // Reserve a slot first so the bound is `capacity_`, not the ring's size.
    std::size_t s = size_.fetch_add(1, std::memory_order_seq_cst);
    if (s >= capacity_) {
      size_.fetch_sub(1, std::memory_order_seq_cst);
      return false;
    }
    while (!ring_.try_push(v)) std::this_thread::yield();  // see constructor
    if (pop_waiters_.load(std::memory_order_seq_cst) > 0) wake(data_epoch_);
    return true;
  }
  static void wake(std::atomic<std::uint32_t>& epoch) {
    epoch.fetch_add(1, std::memory_order_seq_cst);
    epoch.notify_all();
  }

  Ring ring_;
  const std::size_t capacity_;
  alignas(cache_line) std::atomic<std::size_t> size_{0};
  alignas(cache_line) std::atomic<bool> closed_{false};
  std::atomic<int> push_waiters_{0}, pop_waiters_{0};
  std::atomic<std::uint32_t> data_epoch_{0}, space_epoch_{0};
};

}  // namespace sinew::detail
