#pragma once
/// \file view.hpp
/// Typed, non-owning view over a buffer with a 1-, 2- or 3-D shape
/// (row-major; index 0 is the outermost dimension).
///
/// \code
/// void mirror(sinew::view<const rgba8, 2> in, sinew::view<rgba8, 2> out) {
///   for (size_t r = 0; r < in.rows(); ++r)
///     for (size_t c = 0; c < in.cols(); ++c) out(r, c) = in(r, in.cols() - 1 - c);
/// }
/// \endcode
#include <cstddef>
#include <span>

#include <sinew/engine/shape.hpp>

namespace sinew {

template <class T, unsigned Rank = 1>
class view {
 public:
  static_assert(Rank >= 1 && Rank <= 3, "views are 1-, 2- or 3-D");
  using value_type = T;
  static constexpr unsigned rank = Rank;

  view() = default;
  view(T* data, const sinew::shape& s) : data_(data), shape_(s) {}
  /// A const view from a mutable one.
  template <class U>
  view(const view<U, Rank>& o) : data_(o.data()), shape_(o.shape()) {}

  T* data() const noexcept { return data_; }
  const sinew::shape& shape() const noexcept { return shape_; }
  std::size_t size() const noexcept { return shape_.count(); }
  std::size_t extent(unsigned d) const noexcept { return shape_.extent(d); }
  /// 2-D: rows and columns; 3-D: rows/cols of one plane.
  std::size_t planes() const noexcept { return Rank == 3 ? shape_.ext[0] : 1; }
  std::size_t rows() const noexcept { return Rank == 3 ? shape_.ext[1] : shape_.ext[0]; }
  std::size_t cols() const noexcept { return Rank == 1 ? shape_.ext[0] : shape_.ext[Rank - 1]; }

  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T& operator()(std::size_t i) const noexcept { return data_[i]; }
  T& operator()(std::size_t r, std::size_t c) const noexcept { return data_[r * shape_.ext[1] + c]; }
  T& operator()(std::size_t p, std::size_t r, std::size_t c) const noexcept {
    return data_[(p * shape_.ext[1] + r) * shape_.ext[2] + c];
  }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size(); }
  std::span<T> span() const noexcept { return {data_, size()}; }
  /// Elements [b, e) as a flat span.
  std::span<T> subspan(std::size_t b, std::size_t e) const noexcept { return {data_ + b, e - b}; }

 private:
  T* data_ = nullptr;
  sinew::shape shape_{};
};

}  // namespace sinew
