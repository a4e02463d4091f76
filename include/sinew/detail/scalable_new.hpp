#pragma once
// Internal to the library's sources (they link libtbbmalloc): allocation
// through oneTBB's scalable allocator for objects made on one thread and
// freed on another, or made anew for every run.
#include <cstddef>
#include <new>

#include <oneapi/tbb/scalable_allocator.h>

namespace sinew::detail {

// scalable_alloc(n, align): `n` bytes aligned to `align` from oneTBB's
// scalable allocator (throws std::bad_alloc); scalable_release(p, align)
// frees them. glibc serialises frees from other threads on its arena's
// lock, and aligns over-aligned types (`alignas(cache_line)` members)
// through memalign, several times slower than a plain allocation.
// Sanitizer builds use the default allocator: ThreadSanitizer cannot see
// the uninstrumented allocator's hand-over of reused memory, nor
// AddressSanitizer its frees.
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
inline void* scalable_alloc(std::size_t n, std::size_t align) {
  if (void* p = align <= alignof(std::max_align_t) ? scalable_malloc(n) : scalable_aligned_malloc(n, align)) return p;
  throw std::bad_alloc();
}
inline void scalable_release(void* p, std::size_t align) noexcept {
  if (align <= alignof(std::max_align_t)) scalable_free(p);
  else scalable_aligned_free(p);
}
#else
inline void* scalable_alloc(std::size_t n, std::size_t align) { return ::operator new(n, std::align_val_t(align)); }
inline void scalable_release(void* p, std::size_t align) noexcept { ::operator delete(p, std::align_val_t(align)); }
#endif

/// Base whose class-level operator new/delete use scalable_alloc: for
/// objects made on one thread and freed on another, or made anew for every
/// run.
///
/// \code
/// struct stage_rt : sinew::detail::scalable_new { alignas(64) std::atomic<int> a; };
/// auto s = std::make_unique<stage_rt>();   // scalable_aligned_malloc(sizeof, 64)
/// \endcode
struct scalable_new {
  static void* operator new(std::size_t n) { return scalable_alloc(n, alignof(std::max_align_t)); }
  static void operator delete(void* p) noexcept { scalable_release(p, alignof(std::max_align_t)); }
  static void* operator new(std::size_t n, std::align_val_t a) { return scalable_alloc(n, std::size_t(a)); }
  static void operator delete(void* p, std::align_val_t a) noexcept { scalable_release(p, std::size_t(a)); }
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
  T* allocate(std::size_t n) { return static_cast<T*>(scalable_alloc(n * sizeof(T), alignof(T))); }
  void deallocate(T* p, std::size_t) noexcept { scalable_release(p, alignof(T)); }
  template <class U>
  bool operator==(const scalable_allocator<U>&) const noexcept { return true; }
};

}  // namespace sinew::detail
