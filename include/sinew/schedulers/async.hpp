#pragma once
/// \file async.hpp
/// One asynchronous call on a scheduler, and the future of its result.
///
/// `sinew::async(sched, f)` submits `f` as one task and returns a
/// `task_future` of its result. `get()` waits like `task_group::wait`: on a
/// worker of the scheduler it runs other tasks meanwhile (so futures can be
/// awaited inside tasks, recursively), on any other thread it sleeps; then
/// it returns the value or rethrows what `f` threw. Like `std::async`'s, the
/// future's destructor waits for the task, so nothing `f` captured by
/// reference can go out of scope under it.
///
/// \code
/// sinew::steal_scheduler s(4);
/// auto a = sinew::async(s, [] { return count_words("a.txt"); });
/// auto b = sinew::async(s, [] { return count_words("b.txt"); });
/// std::size_t total = a.get() + b.get();        // rethrows if either threw
///
/// // Recursive: a task waits for the futures of its halves.
/// std::function<long(long)> fib = [&](long n) -> long {
///   if (n < 2) return n;
///   auto x = sinew::async(s, [&, n] { return fib(n - 1); });
///   return fib(n - 2) + x.get();                 // helps while it waits
/// };
/// long f30 = sinew::async(s, [&] { return fib(30); }).get();
/// \endcode
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <sinew/schedulers/scheduler.hpp>

namespace sinew {

template <class T>
class task_future;

/// Runs `f()` as one task of `s` (placed by `hint` where the policy reads
/// it) and returns the future of its result. `f` is moved (or copied) into
/// the task; it may be move-only (a `task_function` holds it).
template <class F>
auto async(scheduler& s, F&& f, const locality_hint& hint = {}) -> task_future<std::invoke_result_t<std::decay_t<F>&>>;

/// The result of `sinew::async`: move-only; `get()` once.
template <class T>
class task_future {
  static_assert(!std::is_reference_v<T>, "sinew::async: return a value, not a reference");

 public:
  task_future() = default;
  task_future(task_future&&) noexcept = default;
  task_future& operator=(task_future&& o) noexcept {
    if (this != &o) {
      settle();
      st_ = std::move(o.st_);
    }
    return *this;
  }
  task_future(const task_future&) = delete;
  task_future& operator=(const task_future&) = delete;
  /// Waits for the task (as `std::async`'s future does).
  ~task_future() { settle(); }

  /// False once `get()` has returned, or for a default-constructed future.
  bool valid() const noexcept { return st_ != nullptr; }
  /// Whether the task has finished (`get()` would not wait).
  bool ready() const noexcept { return st_ && st_->counter.pending.load(std::memory_order_acquire) == 0; }
  /// Waits for the task without taking its result (a worker helps meanwhile).
  void wait() const {
    if (st_) st_->sched->wait_counted(st_->counter);
  }
  /// Waits, then returns the task's value or rethrows its exception; the
  /// future is then no longer valid.
  T get() {
    if (!st_) throw std::logic_error("sinew::task_future::get: no result (get() was called, or the future is empty)");
    wait();
    std::unique_ptr<state> st = std::move(st_);  // freed on return: the task is done with it
    if (st->counter.error) std::rethrow_exception(st->counter.error);
    if constexpr (!std::is_void_v<T>) return std::move(*st->value);
  }

 private:
  struct empty {};
  struct state {
    explicit state(scheduler& s) : sched(&s) {}
    scheduler* sched;
    detail::task_counter counter;
    std::conditional_t<std::is_void_v<T>, empty, std::optional<T>> value;
  };

  void settle() noexcept {
    if (st_) st_->sched->wait_counted(st_->counter);
  }

  template <class F>
  friend auto async(scheduler& s, F&& f, const locality_hint& hint) -> task_future<std::invoke_result_t<std::decay_t<F>&>>;

  std::unique_ptr<state> st_;
};

template <class F>
auto async(scheduler& s, F&& f, const locality_hint& hint) -> task_future<std::invoke_result_t<std::decay_t<F>&>> {
  using T = std::invoke_result_t<std::decay_t<F>&>;
  task_future<T> fut;
  fut.st_ = std::make_unique<typename task_future<T>::state>(s);
  auto* st = fut.st_.get();  // stays put until the future has waited for the task
  st->counter.pending.store(1, std::memory_order_relaxed);
  try {
    s.submit_counted(
        [st, fn = std::forward<F>(f)]() mutable {
          if constexpr (std::is_void_v<T>) fn();
          else st->value.emplace(fn());
        },
        st->counter, hint);
  } catch (...) {
    st->counter.pending.store(0, std::memory_order_relaxed);  // never queued: nothing to wait for
    throw;
  }
  return fut;
}

}  // namespace sinew
