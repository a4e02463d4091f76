#pragma once
// Internal: the layer stack inside a work unit (work_unit.hpp).
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

#include <sinew/engine/layer.hpp>

namespace sinew::detail {

/// The layers of a unit, bottom first. Up to `inline_n` live inside the
/// unit, so a stage reaches layer 0 without following a pointer to another
/// block (each of which is a cache miss on the next core a unit visits);
/// deeper stacks move to the heap until clear().
///
/// \code
/// sinew::detail::layer_stack st;
/// st.insert(0, sinew::layer(sinew::shape::d1(n), {out}));   // bottom
/// st.insert(1, sinew::layer(sinew::shape::d1(n), {in}));    // top: st.back()
/// st.pop_back();                                            // {out} is on top
/// \endcode
class layer_stack {
 public:
  static constexpr unsigned inline_n = 3;

  layer_stack() noexcept {}
  layer_stack(const layer_stack& o) : layer_stack() { *this = o; }
  layer_stack& operator=(const layer_stack& o) {
    if (this == &o) return *this;
    clear();
    for (std::size_t i = 0; i < o.size(); ++i) insert(i, layer(o[i]));
    return *this;
  }
  ~layer_stack() { clear(); }

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  layer& operator[](std::size_t i) noexcept { return heap_on_ ? heap_[i] : in_[i]; }
  const layer& operator[](std::size_t i) const noexcept { return heap_on_ ? heap_[i] : in_[i]; }
  layer& back() noexcept { return (*this)[n_ - 1]; }
  const layer& back() const noexcept { return (*this)[n_ - 1]; }

  /// Inserts `l` at position `pos` (<= size()).
  void insert(std::size_t pos, layer&& l) {
    if (heap_on_ || n_ == inline_n) [[unlikely]]
      return insert_heap(pos, std::move(l));
    if (pos == n_) {
      new (&in_[n_]) layer(std::move(l));
    } else {
      new (&in_[n_]) layer(std::move(in_[n_ - 1]));
      for (std::size_t i = n_ - 1; i > pos; --i) in_[i] = std::move(in_[i - 1]);
      in_[pos] = std::move(l);
    }
    ++n_;
  }
  void pop_back() noexcept {
    if (heap_on_) heap_.pop_back();
    else in_[n_ - 1].~layer();
    --n_;
  }
  /// Releases every layer; a stack that moved to the heap comes back inside
  /// (the heap block is kept for the next deep stack).
  void clear() noexcept {
    if (heap_on_) {
      heap_.clear();
      heap_on_ = false;
    } else {
      for (unsigned i = 0; i < n_; ++i) in_[i].~layer();
    }
    n_ = 0;
  }

 private:
  [[gnu::noinline]] void insert_heap(std::size_t pos, layer&& l) {
    if (!heap_on_) {  // the inside is full: every layer moves out
      heap_.reserve(2 * inline_n);
      for (unsigned i = 0; i < n_; ++i) heap_.push_back(std::move(in_[i]));
      for (unsigned i = 0; i < n_; ++i) in_[i].~layer();
      heap_on_ = true;
    }
    heap_.insert(heap_.begin() + std::ptrdiff_t(pos), std::move(l));
    ++n_;
  }

  unsigned n_ = 0;
  bool heap_on_ = false;
  union {
    layer in_[inline_n];  // [0, n_) constructed while !heap_on_
  };
  std::vector<layer> heap_;  // all the layers while heap_on_
};

}  // namespace sinew::detail
