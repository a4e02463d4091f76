#pragma once
// Internal to the library's sources (they link libtbbmalloc): allocation
// through oneTBB's scalable allocator for objects made on one thread and
// freed on another, or made anew for every run.
#include <cstddef>
#include <new>

#include <oneapi/tbb/scalable_allocator.h>

namespace sinew::detail {

/// Base whose class-level operator new/delete use oneTBB's scalable
/// allocator. glibc serialises frees from other threads on its arena's lock,
/// and aligns over-aligned types (`alignas(cache_line)` members) through
/// memalign, several times slower than a plain allocation. Sanitizer builds
/// keep the default allocator: ThreadSanitizer cannot see the uninstrumented
/// allocator's hand-over of reused memory, nor AddressSanitizer its frees.
///
/// \code
/// struct stage_rt : sinew::detail::scalable_new { alignas(64) std::atomic<int> a; };
/// auto s = std::make_unique<stage_rt>();   // scalable_aligned_malloc(sizeof, 64)
/// \endcode
struct scalable_new {
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  static void* operator new(std::size_t n) {
    if (void* p = scalable_malloc(n)) return p;
    throw std::bad_alloc();
  }
  static void operator delete(void* p) noexcept { scalable_free(p); }
  static void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = scalable_aligned_malloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
  }
  static void operator delete(void* p, std::align_val_t) noexcept { scalable_aligned_free(p); }
#endif
};

/// The same for std::allocate_shared (whose control block holds the object).
///
/// \code
/// auto s = std::allocate_shared<run_state>(sinew::detail::scalable_allocator<run_state>{}, ...);
/// \endcode
template <class T>
struct scalable_allocator {
  using value_type = T;
  scalable_allocator() = default;
  template <class U>
  scalable_allocator(const scalable_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    if (void* p = scalable_aligned_malloc(n * sizeof(T), alignof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
#else
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
#endif
  }
  void deallocate(T* p, std::size_t) noexcept {
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    scalable_aligned_free(p);
#else
    ::operator delete(p, std::align_val_t(alignof(T)));
#endif
  }
  template <class U>
  bool operator==(const scalable_allocator<U>&) const noexcept { return true; }
};

}  // namespace sinew::detail
