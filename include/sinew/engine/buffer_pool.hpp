#pragma once
/// \file buffer_pool.hpp
/// Reuses buffer allocations: re-allocating per unit is a cost the Marrow
/// thesis [Marques14] lists to remove. Requests are rounded up to a size class
/// (64-byte steps up to 1 KiB, then 4 steps per power of two, so at most 25%
/// slack); a released buffer is kept for the next request of its class while
/// the cached total stays under `max_cached_bytes`. The global pool also
/// keeps a small per-thread cache of buffers up to 64 KiB, refilled and
/// drained in batches, so the common acquire/release takes no lock.
///
/// \code
/// auto& pool = sinew::buffer_pool::global();
/// {
///   auto a = pool.acquire<float>(1 << 20);   // fresh allocation
/// }                                          // back to the pool
/// auto b = pool.acquire<float>(1 << 20);     // reused: pool.stats().reuses == 1
/// \endcode
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <sinew/engine/buffer.hpp>

namespace sinew {

class buffer_pool {
 public:
  struct statistics {
    std::uint64_t acquires = 0;     ///< buffers handed out
    std::uint64_t reuses = 0;       ///< of which came from the cache
    std::uint64_t allocations = 0;  ///< fresh allocations from the system
    std::uint64_t bytes_in_use = 0; ///< capacity of buffers currently handed out
    std::uint64_t bytes_cached = 0; ///< capacity of buffers kept for reuse
    std::uint64_t peak_bytes_in_use = 0;  ///< sampled on the slow path for the global pool
    std::uint64_t bytes_held = 0;   ///< allocated from the system and not freed (in use + cached)
  };

  explicit buffer_pool(std::size_t max_cached_bytes = std::size_t(1) << 31);
  ~buffer_pool();
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;

  /// The process-wide pool (never destroyed, so buffers may outlive `main`).
  static buffer_pool& global();

  /// A buffer of `count` elements of `type`; contents are unspecified.
  /// Throws `std::bad_alloc` when memory runs out, and `sinew::error` when a
  /// fresh allocation would take the pool past its memory limit (after
  /// freeing the cached buffers): a run then fails naming the stage.
  buffer_ref acquire(std::size_t count, const elem_type& type);
  template <class T>
  buffer_ref acquire(std::size_t count) { return acquire(count, elem_type_of<T>()); }

  /// Frees every cached buffer.
  void trim();
  statistics stats() const;
  std::size_t max_cached_bytes() const noexcept { return max_cached_; }
  void set_max_cached_bytes(std::size_t b) noexcept { max_cached_ = b; }
  /// Caps the bytes the pool holds (in use + cached); 0 = no limit. The
  /// budget of a stream: `sinew run --memory-limit` and the graph file's
  /// "memory_limit" set it on the global pool.
  ///
  /// \code
  /// sinew::buffer_pool::global().set_memory_limit(std::size_t(512) << 20);
  /// \endcode
  void set_memory_limit(std::size_t bytes) noexcept { limit_.store(bytes, std::memory_order_relaxed); }
  std::size_t memory_limit() const noexcept { return limit_.load(std::memory_order_relaxed); }

  /// Size class of a request: index and rounded capacity (exposed for tests).
  static std::pair<unsigned, std::size_t> size_class(std::size_t bytes) noexcept;

 private:
  friend class buffer;
  friend struct thread_cache;
  void give_back(buffer* b) noexcept;
  buffer* take_cached(unsigned cls, std::size_t cap) noexcept;  // from the buckets, or null
  buffer* allocate(unsigned cls, std::size_t cap);
  static void free_block(buffer* b) noexcept;
  /// Buffers of a smaller capacity share one block with their header.
  static constexpr std::size_t inline_below = std::size_t(64) << 10;
  void note_in_use(std::int64_t delta) noexcept;

  static constexpr unsigned kClasses = 16 + 4 * 64;
  static constexpr unsigned kThreadCachedClasses = 16 + 4 * 6;  // up to 64 KiB
  struct bucket {
    std::mutex m;
    std::vector<buffer*> free;
  };
  std::unique_ptr<bucket[]> buckets_;
  std::size_t max_cached_;
  std::atomic<std::uint64_t> acquires_{0}, reuses_{0}, allocations_{0};
  std::atomic<std::uint64_t> in_use_{0}, cached_{0}, peak_{0};
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::size_t> limit_{0};
};

}  // namespace sinew
