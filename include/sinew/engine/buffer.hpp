#pragma once
/// \file buffer.hpp
/// A reference-counted block of 64-byte aligned, padded memory holding
/// `count()` elements of one type. Buffers come from a `buffer_pool` and go
/// back to it when the last `buffer_ref` is dropped; a buffer may also wrap
/// memory the caller owns (`buffer_ref::wrap`), which is then never freed.
///
/// \code
/// sinew::buffer_ref b = sinew::buffer_pool::global().acquire<float>(1000);
/// float* p = b.data<float>();            // 64-byte aligned
/// assert(b->capacity() % 64 == 0);       // padded: whole cache lines / vectors
/// sinew::buffer_ref c = b;               // shares the block; freed once both are gone
/// \endcode
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <sinew/engine/elem_type.hpp>

namespace sinew {

class buffer_pool;

/// Per-buffer state another subsystem attaches to a buffer (the coherence
/// record of OpenCL device copies, see coherence.hpp). Deleted when the last
/// reference goes, before the memory returns to the pool, so a reused block
/// never inherits stale device copies.
///
/// \code
/// struct my_state : sinew::buffer_hook { int x = 0; };
/// sinew::buffer_hook* h = b->attach_hook(new my_state);   // or the one already attached
/// \endcode
class buffer_hook {
 public:
  virtual ~buffer_hook() = default;
};

/// Memory block header. Users hold buffers through `buffer_ref`.
class buffer {
 public:
  static constexpr std::size_t alignment = 64;

  void* data() const noexcept { return data_; }
  /// Number of elements.
  std::size_t count() const noexcept { return count_; }
  /// Shortens the buffer to `n` <= count() elements, e.g. a batch that
  /// filled less than it was acquired for. Only its producer may, before the
  /// buffer is shared; the capacity stays.
  void shrink(std::size_t n) noexcept {
    assert(n <= count_);
    count_ = n;
  }
  /// Bytes the elements occupy (count * element size).
  std::size_t bytes() const noexcept { return count_ * type_->size; }
  /// Bytes usable (a multiple of 64 for pooled buffers): leaves may read and
  /// write past `bytes()` up to here, e.g. for a vector loop's remainder.
  std::size_t capacity() const noexcept { return capacity_; }
  const elem_type& type() const noexcept { return *type_; }
  /// True when the memory belongs to the caller (`buffer_ref::wrap`).
  bool external() const noexcept { return pool_ == nullptr; }
  /// NUMA node holding the pages, -1 when unknown or spread (see placement).
  int numa_node() const noexcept { return numa_node_; }
  /// Pages spread round-robin over `placed_nodes()` nodes (the `fine`
  /// policy): the node of page 0, else -1. `sinew::record_placement` sets it
  /// with `numa_node()`; a buffer handed out again by the pool has neither.
  int interleave_first() const noexcept { return interleave_first_; }
  /// Nodes of the topology the placement was made for (0: never placed).
  unsigned placed_nodes() const noexcept { return placed_nodes_; }
  /// Page size of the placement (0: never placed).
  std::size_t placed_page_size() const noexcept { return placed_page_; }
  std::uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }
  /// The caller's reference is the only one. Acquire: whatever the other
  /// holders did with the buffer before they let go (release() is acq_rel)
  /// happens before the caller's next access, so it may write.
  bool unique() const noexcept { return refs_.load(std::memory_order_acquire) == 1; }
  /// The attached hook, or null.
  buffer_hook* hook() const noexcept { return hook_.load(std::memory_order_acquire); }
  /// Attaches `h` (taking ownership) unless a hook is attached already; returns
  /// the hook now attached (`h` is deleted when another thread won the race).
  buffer_hook* attach_hook(buffer_hook* h) noexcept {
    buffer_hook* cur = nullptr;
    if (hook_.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) return h;
    delete h;
    return cur;
  }

 private:
  friend class buffer_ref;
  friend class buffer_pool;
  friend void record_placement(buffer& b, int node, int interleave_first, unsigned nodes,
                               std::size_t page_size) noexcept;
  buffer() = default;
  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept;
  void drop_hook() noexcept { delete hook_.exchange(nullptr, std::memory_order_acq_rel); }

  // One cache line, what every holder reads first; a pooled buffer below
  // 64 KiB has its data in the line after it (buffer_pool::allocate).
  std::atomic<std::uint32_t> refs_{0};
  std::uint16_t size_class_ = 0;
  std::uint16_t placed_nodes_ = 0;
  void* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
  const elem_type* type_ = nullptr;
  buffer_pool* pool_ = nullptr;  // null: external memory, header deleted on release
  std::atomic<buffer_hook*> hook_{nullptr};
  std::int16_t numa_node_ = -1;
  std::int16_t interleave_first_ = -1;
  std::uint32_t placed_page_ = 0;
};
static_assert(sizeof(buffer) <= buffer::alignment, "a buffer's header fits one cache line");

/// Records where the pages of `b` are (what `placer::place_buffer` decided):
/// all on `node` (>= 0), or round-robin from `interleave_first` (>= 0) over
/// `nodes` nodes; both -1: unknown. Read back through `numa_node()` and
/// `interleave_first()`; the schedulers compute D of a task's `reads` from it.
void record_placement(buffer& b, int node, int interleave_first, unsigned nodes,
                      std::size_t page_size) noexcept;

/// Shared handle to a `buffer` (like `std::shared_ptr`, one word).
class buffer_ref {
 public:
  buffer_ref() noexcept = default;
  buffer_ref(const buffer_ref& o) noexcept : p_(o.p_) { if (p_) p_->add_ref(); }
  buffer_ref(buffer_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  buffer_ref& operator=(buffer_ref o) noexcept { std::swap(p_, o.p_); return *this; }
  ~buffer_ref() { if (p_) p_->release(); }

  /// Wraps caller-owned memory (not freed by Sinew; must outlive every use).
  ///
  /// \code
  /// std::vector<float> v(100);
  /// auto b = sinew::buffer_ref::wrap(v.data(), v.size());
  /// \endcode
  template <class T>
  static buffer_ref wrap(T* data, std::size_t count) {
    return wrap_bytes(const_cast<std::remove_const_t<T>*>(data), count, elem_type_of<T>());
  }
  static buffer_ref wrap_bytes(void* data, std::size_t count, const elem_type& type);

  buffer* get() const noexcept { return p_; }
  buffer* operator->() const noexcept { return p_; }
  buffer& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  template <class T>
  T* data() const noexcept { return static_cast<T*>(p_->data()); }
  void reset() noexcept { if (p_) { p_->release(); p_ = nullptr; } }
  void swap(buffer_ref& o) noexcept { std::swap(p_, o.p_); }
  friend bool operator==(const buffer_ref& a, const buffer_ref& b) { return a.p_ == b.p_; }

 private:
  friend class buffer_pool;
  explicit buffer_ref(buffer* p) noexcept : p_(p) { if (p_) p_->add_ref(); }
  buffer* p_ = nullptr;
};

}  // namespace sinew
