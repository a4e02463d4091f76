#pragma once
/// \file chase_lev_deque.hpp
/// Internal: the lock-free work-stealing deque of [ChaseLev05], with the C11
/// memory orders of [Le13, Fig. 1].
///
/// One owner thread calls `push` and `pop` (at the bottom, LIFO); any thread
/// may call `steal` (at the top, FIFO). Elements are trivially copyable
/// values (in Sinew: task pointers). The circular array grows when full;
/// replaced arrays are kept until the deque is destroyed, because a thief may
/// still be reading one (their slots are never written again, so a late
/// read returns the same value the new array holds, and the thief's CAS on
/// `top` decides whether it may keep it).
///
/// Differences from the paper's code, all of them strengthenings:
///  * indices are signed 64-bit, so `bottom - 1` on an empty deque is -1, not
///    a wrapped-around huge value;
///  * every store to `bottom` is a release store (the paper's push uses a
///    release fence followed by a relaxed store, and take uses relaxed
///    stores). Under C++20 a relaxed store by the owner no longer continues
///    the release sequence of its earlier stores, and ThreadSanitizer does
///    not model fences; release stores make "the element was written before
///    the thief saw the bottom that covers it" explicit to both. On x86 they
///    compile to the same plain `mov`;
///  * the array pointer is loaded with acquire instead of consume.
///
/// \code
/// sinew::detail::chase_lev_deque<task*> d;
/// d.push(t);                    // owner
/// task* x;
/// if (d.pop(x)) run(x);         // owner
/// auto r = d.steal(x);          // any thread: success, empty or lost_race
/// \endcode
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include <sinew/detail/fence.hpp>

namespace sinew::detail {


template <class T>
class chase_lev_deque {
  static_assert(std::is_trivially_copyable_v<T>, "deque elements are copied racily");

 public:
  enum class steal_result { success, empty, lost_race };

  /// `capacity` is rounded up to a power of two (at least 2).
  explicit chase_lev_deque(std::size_t capacity = 256) {
    std::size_t c = 2;
    while (c < capacity) c <<= 1;
    arrays_.push_back(std::make_unique<array>(c));
    array_.store(arrays_.back().get(), std::memory_order_relaxed);
  }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  /// Owner only.
  void push(T x) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    std::int64_t t = top_.load(std::memory_order_acquire);
    array* a = array_.load(std::memory_order_relaxed);
    if (b - t > std::int64_t(a->mask)) a = grow(a, t, b);
    a->put(b, x);
    // Paper: atomic_thread_fence(release); store(bottom, relaxed).
    bottom_.store(b + 1, std::memory_order_release);
  }

  /// Owner only. Takes the most recently pushed element.
  bool pop(T& out) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    array* a = array_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_release);
    seq_cst_fence();
    std::int64_t t = top_.load(std::memory_order_relaxed);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_release);
      return false;
    }
    out = a->get(b);
    if (t == b) {  // the last element: race the thieves for it
      bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                              std::memory_order_relaxed);
      bottom_.store(b + 1, std::memory_order_release);
      return won;
    }
    return true;
  }

  /// Any thread. Takes the oldest element. `lost_race` means another thread
  /// took it first: the deque may still hold elements.
  steal_result steal(T& out) {
    std::int64_t t = top_.load(std::memory_order_acquire);
    seq_cst_fence();
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return steal_result::empty;
    array* a = array_.load(std::memory_order_acquire);  // paper: consume
    T x = a->get(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return steal_result::lost_race;
    out = x;
    return steal_result::success;
  }

  /// A snapshot; exact only when no one else touches the deque.
  std::size_t size_approx() const noexcept {
    std::int64_t b = bottom_.load(std::memory_order_acquire);
    std::int64_t t = top_.load(std::memory_order_acquire);
    return b > t ? std::size_t(b - t) : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

  /// A snapshot of the index of the oldest element: it grows by one with
  /// every element taken from the top, and with every pop of a last one.
  std::int64_t top_approx() const noexcept { return top_.load(std::memory_order_acquire); }

  /// Current capacity of the circular array (owner only, or when quiescent).
  std::size_t capacity() const noexcept {
    return array_.load(std::memory_order_relaxed)->mask + 1;
  }

 private:
  struct array {
    explicit array(std::size_t c) : mask(c - 1), slots(new std::atomic<T>[c]) {}
    const std::size_t mask;
    std::unique_ptr<std::atomic<T>[]> slots;
    T get(std::int64_t i) const noexcept {
      return slots[std::size_t(i) & mask].load(std::memory_order_relaxed);
    }
    void put(std::int64_t i, T x) noexcept {
      slots[std::size_t(i) & mask].store(x, std::memory_order_relaxed);
    }
  };

  // Owner only: doubles the array, copying the live elements [t, b). The old
  // array stays alive (in arrays_) until the deque is destroyed.
  array* grow(array* old, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<array>((old->mask + 1) * 2);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    array* a = bigger.get();
    arrays_.push_back(std::move(bigger));
    array_.store(a, std::memory_order_release);
    return a;
  }

  static constexpr std::size_t line = 64;  // a cache line (fixed: not the compiler's ABI-unstable guess)
  alignas(line) std::atomic<std::int64_t> top_{0};
  alignas(line) std::atomic<std::int64_t> bottom_{0};
  alignas(line) std::atomic<array*> array_{nullptr};
  std::vector<std::unique_ptr<array>> arrays_;  // owner only: current + retired
};

}  // namespace sinew::detail
