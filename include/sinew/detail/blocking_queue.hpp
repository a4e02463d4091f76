#pragma once
// Blocking push/pop and end of stream over a lock-free ring. A thread that
// finds the queue empty (pop) or full (push) first spins briefly on the
// ring, then yields, and only then registers as a waiter and sleeps on a
// futex: nothing spins indefinitely, and the other side makes a wake-up
// system call only for a thread that is about to sleep or asleep (a waiter
// registered during the spin drew one from nearly every operation).
//
// Sleep/wake protocol (a Dekker pair on seq_cst operations): a sleeper
// registers (waiters RMW), reads the epoch, then re-checks `size_` (which a
// pusher raises before it writes the ring and a popper lowers after it read
// it) and sleeps only if the queue is still empty (full). The other side
// changes `size_` (RMW), then reads the waiter count and, if non-zero,
// bumps the epoch and wakes. Either the sleeper sees the new size or the
// waker sees the waiter; a bump between the epoch read and the sleep makes
// the futex return at once.
#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>

#include <sinew/detail/futex.hpp>
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
    return block(
        [&]() -> std::optional<bool> {
          if (closed()) return false;
          if (try_push_ref(v)) return true;
          return std::nullopt;
        },
        [&] { return size_.load(std::memory_order_seq_cst) >= capacity_; }, push_waiters_, space_epoch_);
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
    return block(
        [&]() -> std::optional<bool> {
          if (try_pop(out)) return true;
          if (closed()) return try_pop(out);
          return std::nullopt;
        },
        // size_ > 0 with an empty ring: a push is between its reservation
        // and its write (or a pop between its read and its release): retry.
        [&] { return size_.load(std::memory_order_seq_cst) == 0; }, pop_waiters_, data_epoch_);
  }

  /// Ends the stream: pushes fail from now on, pops drain what is left and
  /// then return false. Wakes every sleeper.
  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    wake(data_epoch_);
    wake(space_epoch_);
  }

 private:
  // The wait of push and pop: `attempt` (an answer, or nullopt to wait)
  // while spinning, then registered in `waiters`; sleeps on `epoch` only
  // while `blocked()` still holds after registering (the protocol above).
  template <class Attempt, class Blocked>
  bool block(Attempt attempt, Blocked blocked, std::atomic<int>& waiters, std::atomic<std::uint32_t>& epoch) {
    for (unsigned spin = 0;; ++spin) {
      if (std::optional<bool> r = attempt()) return *r;
      if (spin < spin_rounds) {
        backoff(spin);
        continue;
      }
      waiters.fetch_add(1, std::memory_order_seq_cst);
      std::uint32_t e = epoch.load(std::memory_order_seq_cst);
      std::optional<bool> r = attempt();
      if (!r && !closed() && blocked()) futex_wait(epoch, e);
      waiters.fetch_sub(1, std::memory_order_seq_cst);
      if (r) return *r;
      if (spin > spin_rounds) std::this_thread::yield();
    }
  }

  bool try_push_ref(T& v) {
    if (closed()) return false;
    // Reserve a slot first so the bound is `capacity_`, not the ring's size.
    // A CAS, not add-then-undo: a transient size above the bound would let
    // a pusher go to sleep on a queue that has room, with no pop to wake it.
    std::size_t s = size_.load(std::memory_order_seq_cst);
    do {
      if (s >= capacity_) return false;
    } while (!size_.compare_exchange_weak(s, s + 1, std::memory_order_seq_cst));
    while (!ring_.try_push(v)) std::this_thread::yield();  // see constructor
    if (pop_waiters_.load(std::memory_order_seq_cst) > 0) wake(data_epoch_);
    return true;
  }
  static void wake(std::atomic<std::uint32_t>& epoch) {
    epoch.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(epoch, INT32_MAX);
  }
  // Before registering as a waiter: pause instructions first (a partner on
  // another core answers within microseconds), then yields (the partner
  // may need this core).
  static constexpr unsigned pause_rounds = 64, spin_rounds = pause_rounds + 16;
  static void backoff(unsigned spin) noexcept {
    if (spin < pause_rounds) {
      for (unsigned i = 0; i < 4; ++i) cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

  Ring ring_;
  const std::size_t capacity_;
  alignas(cache_line) std::atomic<std::size_t> size_{0};
  alignas(cache_line) std::atomic<bool> closed_{false};
  std::atomic<int> push_waiters_{0}, pop_waiters_{0};
  std::atomic<std::uint32_t> data_epoch_{0}, space_epoch_{0};
};

}  // namespace sinew::detail
