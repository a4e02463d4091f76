#pragma once
/// \file task_function.hpp
/// The callable a scheduler runs as one task: move-only, and small
/// callables (captures of up to six pointers that move without throwing)
/// live inside the object, so that submitting one allocates nothing.
/// Larger ones are kept on the heap, as `std::function` keeps all but the
/// smallest.
///
/// \code
/// auto data = std::make_unique<block>();
/// sinew::task_function f = [d = std::move(data), out, i] { out[i] = d->sum(); };   // inline, move-only
/// sched.submit(std::move(f));
/// sched.submit([=] { work(a, b, c, d); });   // what submit takes: any void() callable
/// \endcode
#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace sinew {

namespace detail {
template <class T>
inline constexpr bool is_std_function = false;
template <class R, class... A>
inline constexpr bool is_std_function<std::function<R(A...)>> = true;
}  // namespace detail

class task_function {
 public:
  /// Bytes of capture kept inside the object.
  static constexpr std::size_t inline_size = 6 * sizeof(void*);

  /// Whether a callable of type F is kept inline (no allocation).
  template <class F>
  static constexpr bool stored_inline = sizeof(F) <= inline_size && alignof(F) <= alignof(std::max_align_t) &&
                                        std::is_nothrow_move_constructible_v<F>;

  task_function() noexcept = default;
  task_function(std::nullptr_t) noexcept {}

  /// Takes any callable invocable as `void()`. An empty `std::function` or a
  /// null function pointer gives an empty task_function.
  template <class F, class D = std::decay_t<F>>
    requires(!std::is_same_v<D, task_function> && std::is_invocable_v<D&>)
  task_function(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert, as to std::function
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> || detail::is_std_function<D>) {
      if (!f) return;
    }
    if constexpr (stored_inline<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }

  task_function(task_function&& o) noexcept : ops_(o.ops_) {
    if (ops_) {
      relocate(o);
      o.ops_ = nullptr;
    }
  }
  task_function& operator=(task_function&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_) {
        relocate(o);
        o.ops_ = nullptr;
      }
    }
    return *this;
  }
  task_function& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  task_function(const task_function&) = delete;
  task_function& operator=(const task_function&) = delete;
  ~task_function() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Calls the callable (precondition: not empty). It stays held until
  /// `reset()` or destruction.
  void operator()() { ops_->invoke(buf_); }

  /// Destroys the callable (releasing its captures); empty afterwards.
  void reset() noexcept {
    if (ops_) {
      if (ops_->destroy) ops_->destroy(buf_);
      ops_ = nullptr;
    }
  }

 private:
  // `move` null: the bytes may be copied (trivially copyable, or a heap
  // pointer); `destroy` null: nothing to destroy.
  struct ops {
    void (*invoke)(void*);
    void (*move)(void* to, void* from) noexcept;  // move-constructs, destroys the source
    void (*destroy)(void*) noexcept;
  };
  template <class D>
  static constexpr ops inline_ops{
      [](void* p) { (*static_cast<D*>(p))(); },
      std::is_trivially_copyable_v<D> ? nullptr
                                      : +[](void* to, void* from) noexcept {
                                          D* s = static_cast<D*>(from);
                                          ::new (to) D(std::move(*s));
                                          s->~D();
                                        },
      std::is_trivially_destructible_v<D> ? nullptr : +[](void* p) noexcept { static_cast<D*>(p)->~D(); }};
  template <class D>
  static constexpr ops heap_ops{[](void* p) { (**static_cast<D**>(p))(); }, nullptr,
                                [](void* p) noexcept { delete *static_cast<D**>(p); }};

  void relocate(task_function& o) noexcept {
    if (ops_->move) ops_->move(buf_, o.buf_);
    else std::memcpy(buf_, o.buf_, inline_size);
  }

  alignas(std::max_align_t) unsigned char buf_[inline_size];
  const ops* ops_ = nullptr;
};

}  // namespace sinew
