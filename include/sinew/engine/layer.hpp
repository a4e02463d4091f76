#pragma once
/// \file layer.hpp
/// A layer of a work unit: up to eight buffers and the shape they cover
/// (work_unit.hpp stacks them).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <sinew/engine/buffer.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/engine/view.hpp>

namespace sinew {

/// A set of buffers (at most `layer::max_buffers`) with the layer's shape. A
/// buffer may have a shape of its own (`add(b, s)`): a zip or join of units of
/// different shapes keeps each part's shape, and a per-chunk leaf sees every
/// buffer with its own (leaf.hpp); leaves that index every buffer by the same
/// element (per-element and per-record maps, OpenCL kernels) refuse such a
/// layer. A layer may have a shape and no buffers: an index space with no
/// data (e.g. the coefficient indices of the Series benchmark).
///
/// \code
/// sinew::layer l(sinew::shape::d2(480, 640), {edges});   // edges: 480x640
/// l.add(hist, sinew::shape::d1(256));                     // its own shape
/// assert(!l.uniform() && l.shape_of(1).count() == 256);
/// auto h = l.get<const std::uint32_t>(1);                 // a view of 256 elements
/// \endcode
class layer {
 public:
  static constexpr unsigned max_buffers = 8;

  layer() noexcept : bufs_{} {}
  explicit layer(const sinew::shape& s) noexcept : shape_(s), bufs_{} {}
  layer(const sinew::shape& s, std::initializer_list<buffer_ref> bufs) : shape_(s), bufs_{} {
    for (auto& b : bufs) add(b);
  }
  // Copies, moves and destruction touch the n_ buffers held, not all
  // max_buffers slots: a unit moves and drops layers on every hop.
  layer(const layer& o) : shape_(o.shape_), n_(o.n_), own_(o.own_), bufs_{} {
    for (unsigned i = 0; i < n_; ++i) bufs_[i] = o.bufs_[i];
  }
  layer(layer&& o) noexcept : shape_(o.shape_), n_(o.n_), own_(std::move(o.own_)), bufs_{} {
    for (unsigned i = 0; i < n_; ++i) bufs_[i].swap(o.bufs_[i]);
    o.n_ = 0;
    o.own_.mask = 0;
  }
  layer& operator=(const layer& o) {
    if (this != &o) *this = layer(o);
    return *this;
  }
  layer& operator=(layer&& o) noexcept {
    if (this == &o) return *this;
    clear();
    shape_ = o.shape_;
    own_ = std::move(o.own_);
    for (unsigned i = 0; i < o.n_; ++i) bufs_[i].swap(o.bufs_[i]);
    n_ = std::exchange(o.n_, 0u);
    o.own_.mask = 0;
    return *this;
  }
  ~layer() { clear(); }

  const sinew::shape& shape() const noexcept { return shape_; }
  /// Sets the layer's shape; buffers added with a shape of their own keep it.
  void set_shape(const sinew::shape& s) noexcept { shape_ = s; }
  std::size_t count() const noexcept { return shape_.count(); }
  unsigned size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const buffer_ref& operator[](unsigned i) const noexcept { return bufs_[i]; }
  buffer_ref& operator[](unsigned i) noexcept { return bufs_[i]; }
  void add(buffer_ref b) {
    if (n_ == max_buffers) throw error("a layer holds at most 8 buffers");
    bufs_[n_++] = std::move(b);
  }
  /// Adds `b` with shape `s` (the layer's shape when equal to it).
  void add(buffer_ref b, const sinew::shape& s) {
    add(std::move(b));
    if (s == shape_) return;
    if (!own_.shapes) own_.shapes.reset(new sinew::shape[max_buffers]);
    own_.shapes[n_ - 1] = s;
    own_.mask |= std::uint8_t(1u << (n_ - 1));
  }
  /// Shape of buffer `i`: its own if it was added with one, else the layer's.
  const sinew::shape& shape_of(unsigned i) const noexcept {
    return (own_.mask >> i) & 1 ? own_.shapes[i] : shape_;
  }
  /// Every buffer has the layer's shape.
  bool uniform() const noexcept {
    for (unsigned m = own_.mask, i = 0; m; m >>= 1, ++i)
      if ((m & 1) && !(own_.shapes[i] == shape_)) return false;
    return true;
  }
  void clear() noexcept {
    for (unsigned i = 0; i < n_; ++i) bufs_[i].reset();
    n_ = 0;
    own_.mask = 0;
  }
  /// Typed view of buffer `i` with its shape (checked: index and element size).
  ///
  /// \code
  /// auto xs = unit.in().get<const float>(0);
  /// \endcode
  template <class T, unsigned Rank = 1>
  view<T, Rank> get(unsigned i) const {
    if (i >= n_ || bufs_[i]->type().size != sizeof(T)) [[unlikely]]
      bad_get(i, sizeof(T));
    return view<T, Rank>(bufs_[i].template data<std::remove_const_t<T>>(), shape_of(i));
  }
  /// Bytes of buffer `i`'s elements: those of its shape (shape_of).
  std::size_t bytes_of(unsigned i) const noexcept { return shape_of(i).count() * bufs_[i]->type().size; }
  /// Bytes of data held by the layer's buffers.
  std::size_t bytes() const noexcept {
    std::size_t s = 0;
    for (unsigned i = 0; i < n_; ++i) s += bufs_[i]->bytes();
    return s;
  }

 private:
  // Out of line and cold, so that get() inlines to a compare and a load.
  [[noreturn, gnu::cold, gnu::noinline]] void bad_get(unsigned i, std::size_t elem_size) const {
    if (i >= n_)
      throw error("buffer " + std::to_string(i) + " does not exist (layer has " + std::to_string(n_) + ")");
    throw error("buffer " + std::to_string(i) + " holds " + std::to_string(bufs_[i]->type().size) +
                "-byte elements, view wants " + std::to_string(elem_size));
  }
  /// The buffers' own shapes: bit i of `mask` set = shapes[i] is buffer i's.
  /// Allocated on the first buffer of another shape, copied with the layer.
  struct own_shapes {
    std::uint8_t mask = 0;
    std::unique_ptr<sinew::shape[]> shapes;
    own_shapes() = default;
    own_shapes(own_shapes&&) noexcept = default;
    own_shapes& operator=(own_shapes&&) noexcept = default;
    own_shapes(const own_shapes& o) : mask(o.mask) {
      if (o.mask) shapes.reset(new sinew::shape[max_buffers]), std::copy_n(o.shapes.get(), max_buffers, shapes.get());
    }
    own_shapes& operator=(const own_shapes& o) {
      if (this != &o) *this = own_shapes(o);
      return *this;
    }
  };

  sinew::shape shape_{};
  unsigned n_ = 0;
  own_shapes own_;
  // Slots [0, n_) hold the buffers, the others are null: a union, so that
  // destroying a layer does not visit all max_buffers slots (clear() does
  // the n_ that may hold one).
  union {
    buffer_ref bufs_[max_buffers];
  };
};

}  // namespace sinew
