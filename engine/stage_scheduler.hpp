#pragma once
// Internal: the scheduler a stage's leaves see.
#include <sinew/schedulers/scheduler.hpp>

namespace sinew::detail {

struct stage_rt;

/// Forwards every call to the run's scheduler, except the two parallel
/// loops, which it also counts (and traces) as the stage's chunks, so maps
/// need no hook of their own.
///
/// \code
/// stage_scheduler s(run_sched, stage);
/// s.parallel_for(n, grain, body);   // real_.parallel_for_at({unit's buffers}, ...); stage.chunks += blocks run
/// \endcode
class stage_scheduler final : public scheduler {
 public:
  stage_scheduler(scheduler& real, stage_rt& st) : real_(real), st_(st) {}
  const char* name() const noexcept override { return real_.name(); }
  unsigned concurrency() const noexcept override { return real_.concurrency(); }
  void submit(task_function fn, const locality_hint& hint) override { real_.submit(std::move(fn), hint); }
  void submit_backup(task_function fn) override { real_.submit_backup(std::move(fn)); }
  void submit_counted(task_function fn, task_counter& c, const locality_hint& hint) override {
    real_.submit_counted(std::move(fn), c, hint);
  }
  /// Intercepted: as `parallel_for_at` with an empty hint.
  void parallel_for(std::size_t n, std::size_t grain, function_ref<void(std::size_t, std::size_t)> body) override;
  /// Intercepted: counts the chunks; a hint that names no data gets the
  /// placement of the unit's input buffers (`deal` runs the chunks on their
  /// node), the rest of the hint is passed on as given.
  void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                       function_ref<void(std::size_t, std::size_t)> body) override;
  void wait_counted(task_counter& c) noexcept override { real_.wait_counted(c); }
  void help_until(help_latch& l) override { real_.help_until(l); }
  scheduler_stats stats() const override { return real_.stats(); }
  void reset_stats() override { real_.reset_stats(); }
  int current_node() const noexcept override { return real_.current_node(); }
  const topology* numa_topology() const noexcept override { return real_.numa_topology(); }

 private:
  scheduler& real_;
  stage_rt& st_;
};

}  // namespace sinew::detail
