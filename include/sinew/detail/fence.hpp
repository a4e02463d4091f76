#pragma once
// A sequentially consistent fence usable in ThreadSanitizer builds.

namespace sinew::detail {

/// std::atomic_thread_fence(seq_cst). GCC warns (-Wtsan) that
/// ThreadSanitizer does not model fences; it still executes them (the
/// protocols stay correct), it only derives no happens-before from them.
/// Nothing here relies on a fence for happens-before (see above), so the
/// warning is silenced for this one function.
#pragma GCC diagnostic push
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
inline void seq_cst_fence() noexcept { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#pragma GCC diagnostic pop

}  // namespace sinew::detail
