#pragma once
/// \file group_arena.hpp
/// Scratch memory of one work-group while it runs on a worker: its local
/// memory, the per-work-item copies of values that live across barriers and
/// the predicate arrays of divergent breadth-first loops. A bump allocator,
/// reset between groups, so a group costs no malloc once the worker's arena
/// has grown to the kernel's needs.
///
/// \code
/// sinew::detail::arena_lease lease;           // this worker's arena
/// float* tile = static_cast<float*>(lease.get().allocate(256 * sizeof(float), 64));
/// lease.get().reset();                        // next group
/// \endcode
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace sinew::detail {

class group_arena {
 public:
  static constexpr std::size_t align = 64;  // a cache line, and enough for any SIMD type

  void* allocate(std::size_t bytes, std::size_t alignment) {
    alignment = std::max(alignment, std::size_t(alignof(std::max_align_t)));
    std::size_t at = (used_ + alignment - 1) / alignment * alignment;
    if (at + bytes <= cap_) {
      used_ = at + bytes;
      return buf_.get() + at;
    }
    // Does not fit: earlier pointers of this group must stay valid, so spill
    // into a block of its own and grow the main block at the next reset.
    spill_bytes_ += bytes + alignment;
    spill_.emplace_back(new (std::align_val_t(align)) std::byte[bytes + alignment]);
    void* p = spill_.back().get();
    std::size_t space = bytes + alignment;
    return std::align(alignment, bytes, p, space);
  }
  void reset() {
    if (!spill_.empty()) {
      std::size_t want = std::max(cap_ * 2, cap_ + spill_bytes_);
      spill_.clear();
      spill_bytes_ = 0;
      buf_.reset(new (std::align_val_t(align)) std::byte[want]);
      cap_ = want;
    }
    used_ = 0;
  }
  bool in_use = false;

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t(align)); }
  };
  std::unique_ptr<std::byte[], aligned_delete> buf_;
  std::size_t cap_ = 0, used_ = 0, spill_bytes_ = 0;
  std::vector<std::unique_ptr<std::byte[], aligned_delete>> spill_;
};

/// The calling thread's arena for the lifetime of the lease, or a private one
/// when that is already leased further up the stack (a group body that waits
/// on the scheduler and picks up another group kernel's task meanwhile).
class arena_lease {
 public:
  arena_lease() {
    static thread_local group_arena mine;
    if (!mine.in_use) {
      a_ = &mine;
      mine.in_use = true;
    } else {
      own_ = std::make_unique<group_arena>();
      a_ = own_.get();
    }
    a_->reset();
  }
  ~arena_lease() {
    if (!own_) a_->in_use = false;
  }
  arena_lease(const arena_lease&) = delete;
  arena_lease& operator=(const arena_lease&) = delete;
  group_arena& get() noexcept { return *a_; }

 private:
  group_arena* a_;
  std::unique_ptr<group_arena> own_;
};

}  // namespace sinew::detail
