#pragma once
/// \file tsan.hpp
/// Happens-before edges that ThreadSanitizer cannot see by itself: hand-offs
/// through libraries not built with it (oneTBB's join of a loop's tasks,
/// libzmq's reuse of a decoder buffer). Nothing in other builds.
///
/// \code
/// // on the thread that hands over (after its last access):
/// sinew::detail::tsan_release(&shared);
/// // on the thread that takes over, once the library says the other is done:
/// sinew::detail::tsan_acquire(&shared);
/// \endcode

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace sinew::detail {

/// The calling thread's accesses so far happen before those that follow a
/// later tsan_acquire(addr) on any thread.
inline void tsan_release([[maybe_unused]] void* addr) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(addr);
#endif
}

/// Takes over what every tsan_release(addr) before it handed over.
inline void tsan_acquire([[maybe_unused]] void* addr) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(addr);
#endif
}

}  // namespace sinew::detail
