#pragma once
// Futex sleeping on a 32-bit atomic and the pause instruction, shared by the
// schedulers' workers and the blocking queues. std::atomic::wait is not used
// for these: libstdc++'s version spins and yields before it sleeps and its
// notify makes a system call whenever any thread is inside wait(), so a
// waiter registered for the whole spin draws a wake-up system call from the
// other side on nearly every operation. Callers here spin on their own
// condition first and register as waiters only just before sleeping.
#include <atomic>
#include <cstdint>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sinew::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Sleeps while *a == expected. Spurious returns are allowed: every caller
// re-checks its condition.
inline void futex_wait(std::atomic<std::uint32_t>& a, std::uint32_t expected) noexcept {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  a.wait(expected, std::memory_order_seq_cst);
#endif
}

// Wakes up to n sleepers; returns how many were woken (as far as the OS
// tells; the fallback reports n).
inline int futex_wake(std::atomic<std::uint32_t>& a, int n) noexcept {
#if defined(__linux__)
  long r = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&a), FUTEX_WAKE_PRIVATE, n, nullptr,
                   nullptr, 0);
  return r > 0 ? int(r) : 0;
#else
  if (n == 1) a.notify_one();
  else a.notify_all();
  return n;
#endif
}

}  // namespace sinew::detail
