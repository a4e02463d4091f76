#pragma once
// Lock-free bounded rings used by the public queues and by graph channels.
// mpmc_ring: D. Vyukov's bounded MPMC queue (per-cell sequence numbers).
// spsc_ring: Lamport's ring with cached indices (as in FastFlow's SPSC buffer).
// Neither blocks; blocking and end-of-stream live in blocking_queue.
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace sinew::detail {

inline constexpr std::size_t cache_line = 64;

inline std::size_t ring_size_for(std::size_t capacity) {
  return std::bit_ceil(capacity < 2 ? std::size_t(2) : capacity);
}

template <class T>
class mpmc_ring {
 public:
  explicit mpmc_ring(std::size_t capacity)
      : mask_(ring_size_for(capacity) - 1), cells_(new cell[mask_ + 1]) {
    restart();
  }
  std::size_t capacity() const noexcept { return mask_ + 1; }
  /// Empty, numbering pushes from 0 again, as if new. No other thread may
  /// use the ring meanwhile (its next user is published by a lock).
  void restart() noexcept {
    for (std::size_t i = 0; i <= mask_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    head_.store(0, std::memory_order_relaxed);
  }

  bool try_push(T& v) noexcept(std::is_nothrow_move_assignable_v<T>) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      std::size_t seq = c.seq.load(std::memory_order_acquire);
      auto dif = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (dif == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.value = std::move(v);
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (dif < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  /// Pops into `v`; `ticket` receives the element's position in push order.
  bool try_pop(T& v, std::uint64_t* ticket = nullptr) noexcept(std::is_nothrow_move_assignable_v<T>) {
    std::size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      std::size_t seq = c.seq.load(std::memory_order_acquire);
      auto dif = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1);
      if (dif == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          v = std::move(c.value);
          c.seq.store(pos + mask_ + 1, std::memory_order_release);
          if (ticket) *ticket = pos;
          return true;
        }
      } else if (dif < 0) {
        return false;  // empty
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

  /// Approximate number of elements (exact when quiescent).
  std::size_t size_approx() const noexcept {
    std::size_t t = tail_.load(std::memory_order_relaxed), h = head_.load(std::memory_order_relaxed);
    return t > h ? t - h : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

 private:
  struct alignas(cache_line) cell {
    std::atomic<std::size_t> seq;
    T value;
  };
  const std::size_t mask_;
  std::unique_ptr<cell[]> cells_;
  alignas(cache_line) std::atomic<std::size_t> tail_{0};
  alignas(cache_line) std::atomic<std::size_t> head_{0};
};

template <class T>
class spsc_ring {
 public:
  explicit spsc_ring(std::size_t capacity)
      : mask_(ring_size_for(capacity) - 1), slots_(new T[mask_ + 1]) {}
  std::size_t capacity() const noexcept { return mask_ + 1; }
  /// Empty, numbering pushes from 0 again (as mpmc_ring::restart).
  void restart() noexcept {
    tail_.store(0, std::memory_order_relaxed);
    head_.store(0, std::memory_order_relaxed);
    head_cache_ = tail_cache_ = 0;
  }

  /// Producer side only.
  bool try_push(T& v) noexcept(std::is_nothrow_move_assignable_v<T>) {
    std::size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (t - head_cache_ > mask_) return false;
    }
    slots_[t & mask_] = std::move(v);
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  /// Producer side only: fewer than `cap` elements are queued (refreshes the
  /// cached consumer index only when the cached view says no).
  bool producer_has_room(std::size_t cap) noexcept {
    std::size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_cache_ < cap) return true;
    head_cache_ = head_.load(std::memory_order_acquire);
    return t - head_cache_ < cap;
  }
  /// Producer side only: queued elements as the producer last saw them (an upper bound).
  std::size_t producer_size() const noexcept { return tail_.load(std::memory_order_relaxed) - head_cache_; }
  /// Consumer side only.
  bool try_pop(T& v, std::uint64_t* ticket = nullptr) noexcept(std::is_nothrow_move_assignable_v<T>) {
    std::size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h == tail_cache_) return false;
    }
    v = std::move(slots_[h & mask_]);
    head_.store(h + 1, std::memory_order_release);
    if (ticket) *ticket = h;
    return true;
  }
  std::size_t size_approx() const noexcept {
    std::size_t t = tail_.load(std::memory_order_acquire), h = head_.load(std::memory_order_acquire);
    return t > h ? t - h : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

 private:
  const std::size_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(cache_line) std::atomic<std::size_t> tail_{0};
  std::size_t head_cache_ = 0;  // producer's copy
  alignas(cache_line) std::atomic<std::size_t> head_{0};
  std::size_t tail_cache_ = 0;  // consumer's copy
};

}  // namespace sinew::detail
