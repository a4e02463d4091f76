#pragma once
/// \file array.hpp
/// `sinew::array<T, Rank>`: an owning, 64-byte aligned, padded 1-/2-/3-D
/// array whose memory comes from the buffer pool. Use it for inputs and
/// outputs (images, volumes): units wrap it without copying.
///
/// \code
/// sinew::array<rgba8, 2> img(sinew::shape::d2(1024, 1024));
/// img(10, 20) = {255, 0, 0, 255};
/// std::vector<sinew::array<rgba8, 2>> in{img}, out;
/// g.run(in, out).get();      // out[0] has the same shape, filled by the graph
/// \endcode
#include <cstring>
#include <utility>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/view.hpp>

namespace sinew {

template <class T, unsigned Rank = 1>
class array {
 public:
  array() = default;
  explicit array(const sinew::shape& s) { resize(s); }
  explicit array(std::size_t n) requires(Rank == 1) { resize(sinew::shape::d1(n)); }
  array(const array& o) : shape_(o.shape_) {
    if (o.buf_) {
      buf_ = buffer_pool::global().acquire<T>(shape_.count());
      std::memcpy(buf_.data<T>(), o.data(), shape_.count() * sizeof(T));
    }
  }
  array(array&&) noexcept = default;
  array& operator=(array o) noexcept {
    std::swap(buf_, o.buf_);
    std::swap(shape_, o.shape_);
    return *this;
  }

  /// Reallocates for shape `s` (contents unspecified) unless it already fits.
  void resize(const sinew::shape& s) {
    if (!buf_ || shape_.count() != s.count()) buf_ = buffer_pool::global().acquire<T>(s.count());
    shape_ = s;
  }
  const sinew::shape& shape() const noexcept { return shape_; }
  std::size_t size() const noexcept { return buf_ ? shape_.count() : 0; }
  T* data() const noexcept { return buf_ ? buf_.data<T>() : nullptr; }
  T* begin() const noexcept { return data(); }
  T* end() const noexcept { return data() + size(); }
  T& operator[](std::size_t i) const noexcept { return data()[i]; }
  template <class... I>
  T& operator()(I... i) const noexcept { return view<T, Rank>(data(), shape_)(i...); }
  view<T, Rank> as_view() const noexcept { return {data(), shape_}; }
  const buffer_ref& buffer() const noexcept { return buf_; }
  bool operator==(const array& o) const {
    return shape_ == o.shape_ && (size() == 0 || std::memcmp(data(), o.data(), size() * sizeof(T)) == 0);
  }

 private:
  buffer_ref buf_;
  sinew::shape shape_ = sinew::shape::d1(0);
};

}  // namespace sinew
