#pragma once
// Non-owning callable reference (no allocation), for hot calls such as the
// body of a map's parallel loop.
#include <type_traits>
#include <utility>

namespace sinew::detail {

template <class Sig>
class function_ref;

template <class R, class... A>
class function_ref<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, function_ref>>>
  function_ref(F&& f) noexcept
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...); }) {}
  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

}  // namespace sinew::detail
