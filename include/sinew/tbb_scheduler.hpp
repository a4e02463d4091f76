#pragma once
/// \file tbb_scheduler.hpp
/// The default policy: oneTBB's work-stealing scheduler in a `task_arena`
/// of the requested size. Stage activations are enqueued (FIFO-fair, so a
/// busy stage cannot starve another); map chunks use `tbb::parallel_for`.
///
/// \code
/// sinew::tbb_scheduler s(4);                 // 4 workers
/// sinew::graph g(tree, {.scheduler = &s});
/// \endcode
#include <memory>

#include <sinew/scheduler.hpp>

namespace sinew {

class tbb_scheduler final : public scheduler {
 public:
  /// `threads` = 0: all hardware threads.
  explicit tbb_scheduler(unsigned threads = 0);
  /// Waits for every submitted task to finish.
  ~tbb_scheduler() override;
  const char* name() const noexcept override { return "tbb"; }
  unsigned concurrency() const noexcept override;
  void submit(std::function<void()> fn, const locality_hint& hint = {}) override;
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override;
  scheduler_stats stats() const override;
  void reset_stats() override;

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace sinew
