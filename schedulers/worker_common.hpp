#pragma once
// Internal pieces shared by the steal and deal schedulers: futex sleeping,
// a per-thread cache of task objects, and the state of a parallel_for.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>

#include <sinew/detail/function_ref.hpp>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sinew::detail::workers {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Futex on a 32-bit atomic: sleep while *a == expected; wake n sleepers.
// Spurious returns are allowed: every caller re-checks its condition.
inline void futex_wait(std::atomic<std::uint32_t>& a, std::uint32_t expected) noexcept {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  a.wait(expected, std::memory_order_seq_cst);
#endif
}
inline void futex_wake(std::atomic<std::uint32_t>& a, int n) noexcept {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr,
          0);
#else
  if (n == 1) a.notify_one();
  else a.notify_all();
#endif
}

// A per-thread cache of task objects, so that the steady state allocates
// nothing per task. A task is freed by the thread that ran it, which may not
// be the one that allocated it; caches are bounded, the excess is deleted.
// Task needs `Task* next_free` and `void recycle()` (clears per-use state).
template <class Task>
struct task_cache {
  static constexpr unsigned cap = 4096;
  Task* head = nullptr;
  unsigned n = 0;
  ~task_cache() {
    while (head) {
      Task* t = head;
      head = t->next_free;
      delete t;
    }
  }
  Task* get() {
    if (!head) return new Task;
    Task* t = head;
    head = t->next_free;
    --n;
    return t;
  }
  void put(Task* t) noexcept {
    if (n >= cap) {
      delete t;
      return;
    }
    t->recycle();
    t->next_free = head;
    head = t;
    ++n;
  }
};

// A parallel_for in progress; lives on the caller's stack. `remaining`
// counts the elements not yet processed: the block that brings it to zero
// finishes the loop, and nothing may touch the loop_ctx after that (the
// caller may already have returned), which is why finished loops are
// announced on scheduler-owned futex words rather than on the loop itself.
struct loop_ctx {
  loop_ctx(function_ref<void(std::size_t, std::size_t)> bd, std::size_t g, std::size_t n)
      : body(bd), grain(g), remaining(n) {}
  function_ref<void(std::size_t, std::size_t)> body;
  std::size_t grain;
  std::atomic<std::size_t> remaining;
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by whoever set `failed`
};

}  // namespace sinew::detail::workers
